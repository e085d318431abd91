//! A hostile NFSv3 server, for tests only.
//!
//! One TCP port on 127.0.0.1 serves both MOUNT (100005) and NFS (100003):
//! the call's program number picks the program, and the client is given the
//! port as both `nfsport` and `mountport`. The server answers just enough to
//! be mounted and used — NULL, EXPORT, MNT, UMNT, FSINFO, GETATTR, LOOKUP,
//! READ, WRITE, COMMIT, SETATTR, CREATE, REMOVE, MKDIR, RMDIR, RENAME — on
//! one export ([`EXPORT`]) holding one file ([`FILE`]) whose byte at offset
//! `o` is [`pattern`]`(o)` (or, with [`Options::store`], whatever was
//! written there). It also answers PORTMAP GETPORT (100000) for itself, so
//! bound to port 111 ([`Options::port`]) it is a portmapper too.
//!
//! On top of that it follows a [`Plan`]: one [`Fault`] applied to the first
//! `times` calls of one procedure (counted over every connection), after
//! which it answers correctly again. The state change of the call (a REMOVE
//! removing the file) happens even when the reply is sabotaged, as with a
//! real server that executed a call and then lost its reply. It keeps no
//! duplicate request cache: a retransmission runs again and answers from
//! the state the first copy left (NOENT, EXIST), except that an EXCLUSIVE
//! CREATE whose verifier matches the one the file was created with gets
//! NFS3_OK, as RFC 1813 §3.3.8 asks (unless [`Options::forget_verifiers`]).
//!
//! With [`Options::store`] it also keeps what survives a crash: a WRITE
//! answered FILE_SYNC or DATA_SYNC, and everything at a COMMIT, goes to a
//! stable copy; [`HostileServer::lose_unstable_data`] throws away the rest
//! and changes the write verifier, as a restarted server would (RFC 1813
//! §3.3.7). The write verifier and the downgrading of WRITEs to UNSTABLE
//! can be changed while the client runs, and a hook ([`HostileServer::on_call`])
//! sees every call before it is executed: it may do either of those, wait
//! (holding that connection's calls back), and delay the reply.
//!
//! With [`Options::mount_any`] it plays a server without the MOUNT EXPORT
//! procedure whose MNT says yes to paths it does not export: any path
//! answered with the root handle ([`MountAny::RootHandle`], several small
//! servers do this), or any path that exists answered with that file's or
//! directory's own handle ([`MountAny::OwnHandle`]). Its export is then
//! `/`, holding [`FILE_NAME`]; [`HostileServer::url_of`] names a path in it.
//!
//! Every connection is served by its own thread; every call is logged
//! ([`HostileServer::calls`]) so tests can count attempts and reconnects.
//! Dropping the server shuts down the listener and every connection.
//!
//! [`watch`] holds what the tests measure the client with: a hard deadline
//! around each client operation, a counter of panics on the client's own
//! threads, the largest single allocation and the peak RSS.

#![allow(clippy::expect_used, clippy::unwrap_used)]

pub mod capture;
pub mod watch;

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use directnfs_wire::mount::{
    self, dirpath, exportnode, exports, mountres3, mountres3_ok, mountstat3,
};
use directnfs_wire::nfs3::{
    self, createhow3, fattr3, ftype3, nfs_fh3, nfsstat3, nfstime3, specdata3, FSINFO3resok,
    LOOKUP3args, READ3args, WRITE3args,
};
use directnfs_wire::portmap::{self, Mapping};
use directnfs_wire::rpc::record::fragment_header;
use directnfs_wire::rpc::{
    AcceptStat, AcceptedReply, CallHeader, OpaqueAuth, RecordReader, RejectedReply, ReplyBody,
    ReplyHeader,
};
use directnfs_wire::xdr::XdrWrite;
use directnfs_wire::{Decode, Encode, XdrReader};

/// The one export.
pub const EXPORT: &str = "/export";
/// The one file, below the export.
pub const FILE: &str = "/data";
/// Its name in the export's root directory.
pub const FILE_NAME: &str = "data";
/// Root handle returned by MNT.
pub const ROOT_FH: &[u8] = b"hostile-root-fh!";
/// Handle of [`FILE`].
pub const FILE_FH: &[u8] = b"hostile-file-fh!";
/// The directory MKDIR creates (once) in the export's root.
pub const DIR_NAME: &str = "newdir";
/// Its handle.
pub const DIR_FH: &[u8] = b"hostile-dir-fh!!";
/// Write verifier of every WRITE and COMMIT (until changed).
pub const VERF: [u8; 8] = *b"hostile!";
/// XID of replies nobody asked for.
pub const UNSOLICITED_XID: u32 = 0xdead_beef;
/// Handle of every name [`Options::lookup_any`] makes up (a directory).
pub const ANY_FH: &[u8] = b"hostile-any-dir!";
/// Largest file [`Options::store`] keeps (writes past it are acknowledged
/// and dropped).
pub const MAX_STORED: usize = 256 << 20;

/// The content of the file: the byte at `offset`.
pub fn pattern(offset: u64) -> u8 {
    ((offset % 251) as u8) ^ ((offset >> 12) as u8)
}

/// The content of the file from `offset`, `len` bytes.
pub fn pattern_at(offset: u64, len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| pattern(offset.wrapping_add(i)))
        .collect()
}

/// One procedure of one program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proc {
    /// NFSv3 procedure number.
    Nfs(u32),
    /// MOUNT v3 procedure number.
    Mount(u32),
    /// PORTMAP v2 procedure number.
    Pmap(u32),
}

impl Proc {
    pub const NULL: Proc = Proc::Nfs(nfs3::NFSPROC3_NULL);
    pub const GETATTR: Proc = Proc::Nfs(nfs3::NFSPROC3_GETATTR);
    pub const LOOKUP: Proc = Proc::Nfs(nfs3::NFSPROC3_LOOKUP);
    pub const READ: Proc = Proc::Nfs(nfs3::NFSPROC3_READ);
    pub const WRITE: Proc = Proc::Nfs(nfs3::NFSPROC3_WRITE);
    pub const REMOVE: Proc = Proc::Nfs(nfs3::NFSPROC3_REMOVE);
    pub const MKDIR: Proc = Proc::Nfs(nfs3::NFSPROC3_MKDIR);
    pub const READDIRPLUS: Proc = Proc::Nfs(nfs3::NFSPROC3_READDIRPLUS);
    pub const FSINFO: Proc = Proc::Nfs(nfs3::NFSPROC3_FSINFO);
    pub const COMMIT: Proc = Proc::Nfs(nfs3::NFSPROC3_COMMIT);
    pub const SETATTR: Proc = Proc::Nfs(nfs3::NFSPROC3_SETATTR);
    pub const CREATE: Proc = Proc::Nfs(nfs3::NFSPROC3_CREATE);
    pub const RMDIR: Proc = Proc::Nfs(nfs3::NFSPROC3_RMDIR);
    pub const RENAME: Proc = Proc::Nfs(nfs3::NFSPROC3_RENAME);
    pub const MNT: Proc = Proc::Mount(mount::MOUNTPROC3_MNT);
    pub const EXPORT: Proc = Proc::Mount(mount::MOUNTPROC3_EXPORT);
    pub const GETPORT: Proc = Proc::Pmap(portmap::PMAPPROC_GETPORT);

    fn of(h: &CallHeader) -> Option<Proc> {
        match h.prog {
            nfs3::NFS_PROGRAM => Some(Proc::Nfs(h.proc_)),
            mount::MOUNT_PROGRAM => Some(Proc::Mount(h.proc_)),
            portmap::PMAP_PROG => Some(Proc::Pmap(h.proc_)),
            _ => None,
        }
    }
}

/// How a READ reply is bent (every `None` keeps the honest value).
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadShape {
    /// Bytes of data actually sent (the file's content from the offset).
    pub data_len: Option<u32>,
    /// The `count` field, when it should disagree with the data.
    pub count: Option<u32>,
    /// The `eof` flag.
    pub eof: Option<bool>,
}

/// What the server does instead of answering a call properly.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Sends a complete record holding only the first half of the proper
    /// reply, then closes the connection.
    TruncatedRecordThenClose,
    /// Sends the record-marking header and half of the reply, then closes.
    CloseMidRecord,
    /// Sends the reply as two fragments but only the first, then closes.
    CloseAfterFirstFragment,
    /// Closes the connection without answering (a server killed mid-call).
    CloseWithoutReply,
    /// Answers properly, then closes the connection (a server restart).
    ReplyThenClose,
    /// Sends a fragment header announcing 2^31 - 1 bytes and a few bytes,
    /// then never answers on that connection again.
    HugeFragment {
        /// Set the last-fragment bit.
        last: bool,
    },
    /// Sends non-last 64 KiB fragments without end (up to 64 MiB), never
    /// finishing the record.
    FragmentFlood,
    /// Answers with an XID nobody used.
    WrongXid,
    /// Answers properly, and sends the same reply again after `gap`.
    Duplicate {
        /// Pause between the two copies.
        gap: Duration,
    },
    /// Sends replies to XIDs never used (and records too short to have an
    /// XID), then the proper reply.
    Unsolicited,
    /// Sends this many well-formed replies to an XID never used, then the
    /// proper reply.
    UnsolicitedFlood(usize),
    /// Sends the proper reply as fragments of `size` bytes, one write each,
    /// `gap` apart: legal record marking, just slow and split.
    SplitFragments {
        /// Fragment size.
        size: usize,
        /// Pause between fragments.
        gap: Duration,
    },
    /// An accepted SUCCESS header followed by these bytes as the results.
    Results(Vec<u8>),
    /// A READ reply bent as described.
    Read(ReadShape),
    /// These attributes in GETATTR (and LOOKUP) replies.
    Attrs(fattr3),
    /// FSINFO with these rtmax and wtmax.
    Fsinfo {
        /// Largest READ.
        rtmax: u32,
        /// Largest WRITE.
        wtmax: u32,
    },
    /// MSG_DENIED.
    Denied(RejectedReply),
    /// MSG_ACCEPTED with a status other than SUCCESS.
    Accepted(AcceptedReply),
    /// An NFS failure status (with empty failure bodies).
    Status(nfsstat3),
    /// A MOUNT failure status.
    MountStatus(mountstat3),
    /// A successful WRITE reply claiming this many bytes written.
    WriteCount(u32),
    /// READDIRPLUS replies that never reach EOF: the same entry and the
    /// same cookie every time (a cookie loop).
    DirCookieLoop,
    /// READDIRPLUS replies that never reach EOF: 1000 new entries each time.
    EndlessDir,
    /// A COMMIT reply with this write verifier (as after a server restart
    /// that lost unstable data).
    CommitVerifier([u8; 8]),
    /// A successful WRITE reply whose `committed` field is this
    /// `stable_how` (e.g. UNSTABLE for a FILE_SYNC WRITE).
    Committed(u32),
    /// PORTMAP GETPORT answers this port (0: not registered).
    Getport(u32),
    /// Never answers (the connection stays open and keeps reading).
    Silent,
    /// Sends the proper reply one byte per period.
    Trickle(Duration),
}

/// One fault on the first `times` calls of one procedure.
#[derive(Debug, Clone)]
pub struct Plan {
    pub fault: Option<Fault>,
    pub on: Proc,
    pub times: usize,
}

impl Plan {
    /// No fault: a well-behaved server.
    pub fn none() -> Self {
        Self {
            fault: None,
            on: Proc::NULL,
            times: 0,
        }
    }

    /// `fault` on every call of `on`.
    pub fn always(on: Proc, fault: Fault) -> Self {
        Self::times(on, fault, usize::MAX)
    }

    /// `fault` on the first call of `on` only.
    pub fn once(on: Proc, fault: Fault) -> Self {
        Self::times(on, fault, 1)
    }

    /// `fault` on the first `times` calls of `on`.
    pub fn times(on: Proc, fault: Fault, times: usize) -> Self {
        Self {
            fault: Some(fault),
            on,
            times,
        }
    }
}

/// A call the server received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// Connection number (0 for the first accepted).
    pub conn: usize,
    pub proc_: Option<Proc>,
    pub xid: u32,
    /// READ and WRITE: the offset.
    pub offset: Option<u64>,
    /// WRITE: the stable_how asked for.
    pub stable: Option<u32>,
    /// EXCLUSIVE CREATE: the verifier sent.
    pub verf: Option<[u8; 8]>,
    /// MNT: length of the path asked for (also when it is too long to decode).
    pub path_len: Option<usize>,
    /// True when the plan's fault was applied to it.
    pub faulted: bool,
}

/// What MNT answers for paths other than [`EXPORT`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MountAny {
    /// Only [`EXPORT`] is mounted (anything else: MNT3ERR_NOENT), and
    /// EXPORT lists it.
    #[default]
    Off,
    /// No EXPORT procedure (PROC_UNAVAIL), and MNT of *any* path, existing
    /// or not, answers the root handle: the server's one export is `/`.
    RootHandle,
    /// No EXPORT procedure; MNT of `/` answers the root handle, MNT of a
    /// file or directory in it that exists answers that object's own
    /// handle (a file's too), anything else MNT3ERR_NOENT.
    OwnHandle,
}

/// Settings of the well-behaved part.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Size of [`FILE`].
    pub size: u64,
    /// FSINFO rtmax.
    pub rtmax: u32,
    /// FSINFO wtmax.
    pub wtmax: u32,
    /// Port to listen on (127.0.0.1); 0 for any free one.
    pub port: u16,
    /// Keep what WRITEs write (up to [`MAX_STORED`] bytes) and READ it
    /// back, instead of the fixed [`pattern`]; files CREATE made keep
    /// their content too ([`HostileServer::created_content`]).
    pub store: bool,
    /// LOOKUP finds every name in every directory (a directory, [`ANY_FH`]),
    /// so a client can be made to cache any number of handles.
    pub lookup_any: bool,
    /// An EXCLUSIVE CREATE of an existing file is NFS3ERR_EXIST even when
    /// its verifier matches (a server that does not keep verifiers).
    pub forget_verifiers: bool,
    /// Every WRITE is answered UNSTABLE, whatever it asked for (leaves the
    /// plan free for a COMMIT fault); [`Fault::Committed`] does the same
    /// for the plan's calls only. See also
    /// [`HostileServer::set_downgrade_writes`].
    pub downgrade_writes: bool,
    /// MOUNT without EXPORT, saying yes to more than its export; see
    /// [`MountAny`].
    pub mount_any: MountAny,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            size: 1 << 20,
            rtmax: 64 * 1024,
            wtmax: 64 * 1024,
            port: 0,
            store: false,
            lookup_any: false,
            forget_verifiers: false,
            downgrade_writes: false,
            mount_any: MountAny::Off,
        }
    }
}

#[derive(Debug)]
struct State {
    opts: Options,
    /// The port listened on.
    port: u16,
    plan: Mutex<Plan>,
    hits: AtomicUsize,
    calls: Mutex<Vec<Seen>>,
    streams: Mutex<Vec<TcpStream>>,
    accepted: AtomicUsize,
    /// Peer address of every accepted connection.
    peers: Mutex<Vec<SocketAddr>>,
    /// The name of [`FILE`] in the root directory (changed by RENAME);
    /// `None` once REMOVEd.
    file_name: Mutex<Option<Vec<u8>>>,
    dir_made: AtomicBool,
    /// Every path MNT was asked for.
    mnt_paths: Mutex<Vec<String>>,
    /// Files made by CREATE: name -> the EXCLUSIVE verifier, if any.
    created: Mutex<HashMap<Vec<u8>, Option<[u8; 8]>>>,
    /// [`Options::store`]: the content of files made by CREATE, by handle.
    created_data: Mutex<HashMap<Vec<u8>, Vec<u8>>>,
    /// [`Options::store`]: the file's content.
    data: Mutex<Vec<u8>>,
    /// [`Options::store`]: what of it is on stable storage.
    durable: Mutex<Vec<u8>>,
    /// The write verifier WRITE and COMMIT replies carry.
    verf: Mutex<[u8; 8]>,
    /// WRITEs are answered UNSTABLE ([`Options::downgrade_writes`]).
    downgrade: AtomicBool,
    hook: HookSlot,
    stop: AtomicBool,
    /// A requested restart: its downtime.
    restart: Mutex<Option<Duration>>,
    restarts: AtomicUsize,
}

/// The server; see the module doc. Stops when dropped.
#[derive(Debug)]
pub struct HostileServer {
    port: u16,
    state: Arc<State>,
}

impl HostileServer {
    /// Starts a server following `plan`, with default options.
    pub fn start(plan: Plan) -> Self {
        Self::with(Options::default(), plan)
    }

    /// Starts a server with `opts`, following `plan`.
    pub fn with(opts: Options, plan: Plan) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", opts.port))
            .unwrap_or_else(|e| panic!("bind 127.0.0.1:{}: {e}", opts.port));
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("local addr").port();
        let state = Arc::new(State {
            opts,
            port,
            plan: Mutex::new(plan),
            hits: AtomicUsize::new(0),
            calls: Mutex::new(Vec::new()),
            streams: Mutex::new(Vec::new()),
            accepted: AtomicUsize::new(0),
            peers: Mutex::new(Vec::new()),
            file_name: Mutex::new(Some(FILE_NAME.as_bytes().to_vec())),
            dir_made: AtomicBool::new(false),
            mnt_paths: Mutex::new(Vec::new()),
            created: Mutex::new(HashMap::new()),
            created_data: Mutex::new(HashMap::new()),
            data: Mutex::new(if opts.store {
                pattern_at(0, opts.size as usize)
            } else {
                Vec::new()
            }),
            durable: Mutex::new(if opts.store {
                pattern_at(0, opts.size as usize)
            } else {
                Vec::new()
            }),
            verf: Mutex::new(VERF),
            downgrade: AtomicBool::new(opts.downgrade_writes),
            hook: HookSlot::default(),
            stop: AtomicBool::new(false),
            restart: Mutex::new(None),
            restarts: AtomicUsize::new(0),
        });
        let st = Arc::clone(&state);
        std::thread::Builder::new()
            .name(format!("hostile-accept-{port}"))
            .spawn(move || accept_loop(&st, port, listener))
            .expect("spawn");
        Self { port, state }
    }

    /// The port serving both MOUNT and NFS.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of [`FILE`] with `options` (a query string without `?`).
    pub fn url(&self, options: &str) -> String {
        let p = self.port;
        format!("nfs://127.0.0.1{EXPORT}{FILE}?nfsport={p}&mountport={p}&{options}")
    }

    /// The URL of `path` (starting with `/`, written as given: `//f` is
    /// libnfs's way of saying "export `/`") with `options`, for a server
    /// with [`Options::mount_any`].
    pub fn url_of(&self, path: &str, options: &str) -> String {
        let p = self.port;
        format!("nfs://127.0.0.1{path}?nfsport={p}&mountport={p}&{options}")
    }

    /// The paths MNT was asked for so far, in order.
    pub fn mounted_paths(&self) -> Vec<String> {
        self.state.mnt_paths.lock().unwrap().clone()
    }

    /// [`Options::store`]: the content of the file CREATE made as `name`.
    pub fn created_content(&self, name: &str) -> Option<Vec<u8>> {
        let files = self.state.created_data.lock().unwrap();
        files.get(&created_fh(name.as_bytes())).cloned()
    }

    /// Names of the files CREATE made (and not removed since), sorted.
    pub fn created_names(&self) -> Vec<String> {
        let created = self.state.created.lock().unwrap();
        let mut v: Vec<String> = created
            .keys()
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .collect();
        v.sort();
        v
    }

    /// Replaces the plan (the hit counter starts again from zero).
    pub fn set_plan(&self, plan: Plan) {
        let mut p = self.state.plan.lock().unwrap();
        self.state.hits.store(0, Ordering::SeqCst);
        *p = plan;
    }

    /// Every call received so far.
    pub fn calls(&self) -> Vec<Seen> {
        self.state.calls.lock().unwrap().clone()
    }

    /// Calls of `proc_` received so far.
    pub fn count(&self, proc_: Proc) -> usize {
        self.calls()
            .iter()
            .filter(|c| c.proc_ == Some(proc_))
            .count()
    }

    /// Calls the fault was applied to so far.
    pub fn faulted(&self) -> usize {
        self.calls().iter().filter(|c| c.faulted).count()
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.state.accepted.load(Ordering::SeqCst)
    }

    /// The client's source port of every connection accepted so far.
    pub fn peer_ports(&self) -> Vec<u16> {
        self.state
            .peers
            .lock()
            .unwrap()
            .iter()
            .map(SocketAddr::port)
            .collect()
    }

    /// [`Options::store`]: `len` bytes of the file's content at `offset`.
    pub fn stored(&self, offset: usize, len: usize) -> Vec<u8> {
        let d = self.state.data.lock().unwrap();
        d.get(offset..offset + len).unwrap_or_default().to_vec()
    }

    /// The name [`FILE`] has now in the export's root (after RENAMEs), or
    /// `None` once removed.
    pub fn file_name(&self) -> Option<String> {
        let n = self.state.file_name.lock().unwrap();
        n.as_ref().map(|n| String::from_utf8_lossy(n).into_owned())
    }

    /// Makes the directory [`DIR_NAME`] exist (as if MKDIR had run).
    pub fn make_dir(&self) {
        self.state.dir_made.store(true, Ordering::SeqCst);
    }

    /// Whether [`DIR_NAME`] exists.
    pub fn dir_exists(&self) -> bool {
        self.state.dir_made.load(Ordering::SeqCst)
    }

    /// Kills the server as SIGKILL would (every connection reset, the port
    /// closed: connects are refused) and starts it again on the same port
    /// after `downtime`. Returns at once; see [`restarts`](Self::restarts).
    pub fn restart(&self, downtime: Duration) {
        *self.state.restart.lock().unwrap() = Some(downtime);
    }

    /// Restarts completed so far (the port is listening again).
    pub fn restarts(&self) -> usize {
        self.state.restarts.load(Ordering::SeqCst)
    }

    /// What the server can be made to do from a test or a hook.
    pub fn control(&self) -> Control<'_> {
        Control(&self.state)
    }

    /// See [`Control::lose_unstable_data`].
    pub fn lose_unstable_data(&self, verf: [u8; 8]) {
        self.control().lose_unstable_data(verf);
    }

    /// See [`Control::set_downgrade_writes`].
    pub fn set_downgrade_writes(&self, on: bool) {
        self.control().set_downgrade_writes(on);
    }

    /// Calls `hook` with every call received from now on, before the
    /// server executes it (on that connection's thread: sleeping in it
    /// holds back that connection's calls). It returns how long to hold
    /// the reply back after executing the call (`None`: send it at once).
    pub fn on_call(
        &self,
        hook: impl Fn(&Control<'_>, &Seen) -> Option<Duration> + Send + Sync + 'static,
    ) {
        *self.state.hook.0.lock().unwrap() = Some(Arc::new(hook));
    }

    /// Removes the hook.
    pub fn clear_hook(&self) {
        *self.state.hook.0.lock().unwrap() = None;
    }
}

/// A hook; see [`HostileServer::on_call`].
pub type Hook = Arc<dyn Fn(&Control<'_>, &Seen) -> Option<Duration> + Send + Sync>;

#[derive(Default)]
struct HookSlot(Mutex<Option<Hook>>);

impl std::fmt::Debug for HookSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HookSlot")
    }
}

/// Changes the server's behaviour; see [`HostileServer::control`].
pub struct Control<'a>(&'a State);

impl std::fmt::Debug for Control<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Control")
    }
}

impl Control<'_> {
    /// A crash and restart, as the client sees it: everything not on
    /// stable storage ([`Options::store`]: not answered FILE_SYNC or
    /// DATA_SYNC, and not COMMITted since) is gone, and WRITE and COMMIT
    /// carry the write verifier `verf` from now on. Connections stay up.
    pub fn lose_unstable_data(&self, verf: [u8; 8]) {
        let state = self.0;
        let mut data = state.data.lock().unwrap();
        let durable = state.durable.lock().unwrap();
        data.clone_from(&durable);
        *state.verf.lock().unwrap() = verf;
    }

    /// Answers every WRITE UNSTABLE (or as asked, with `false`).
    pub fn set_downgrade_writes(&self, on: bool) {
        self.0.downgrade.store(on, Ordering::SeqCst);
    }

    /// The write verifier WRITE and COMMIT carry from now on.
    pub fn set_verifier(&self, verf: [u8; 8]) {
        *self.0.verf.lock().unwrap() = verf;
    }

    /// [`Options::store`]: `len` bytes of the file's content at `offset`.
    pub fn stored(&self, offset: usize, len: usize) -> Vec<u8> {
        let d = self.0.data.lock().unwrap();
        d.get(offset..offset + len).unwrap_or_default().to_vec()
    }
}

/// Closes every connection with a reset (SO_LINGER 0), as a killed process's.
fn reset_all(state: &State) {
    for s in state.streams.lock().unwrap().drain(..) {
        let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
        let _ = s.shutdown(Shutdown::Both);
    }
}

impl Drop for HostileServer {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        for s in self.state.streams.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

fn accept_loop(state: &Arc<State>, port: u16, mut listener: TcpListener) {
    while !state.stop.load(Ordering::SeqCst) {
        let restart = state.restart.lock().unwrap().take();
        if let Some(downtime) = restart {
            drop(listener);
            reset_all(state);
            std::thread::sleep(downtime);
            listener = loop {
                match TcpListener::bind(("127.0.0.1", port)) {
                    Ok(l) => break l,
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            };
            listener.set_nonblocking(true).expect("nonblocking");
            state.restarts.fetch_add(1, Ordering::SeqCst);
        }
        match listener.accept() {
            Ok((stream, peer)) => {
                state.peers.lock().unwrap().push(peer);
                let conn = state.accepted.fetch_add(1, Ordering::SeqCst);
                if let Ok(clone) = stream.try_clone() {
                    state.streams.lock().unwrap().push(clone);
                }
                let st = Arc::clone(state);
                let _ = std::thread::Builder::new()
                    .name(format!("hostile-conn-{conn}"))
                    .spawn(move || serve(&st, stream, conn));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// What to put on the wire for one call.
enum Output {
    /// These bytes.
    Send(Vec<u8>),
    /// These bytes, then close.
    SendThenClose(Vec<u8>),
    /// These bytes, then never answer on this connection again.
    SendThenMute(Vec<u8>),
    /// Each piece in its own write, `gap` apart.
    Paced(Vec<Vec<u8>>, Duration),
    /// One byte per period.
    Trickle(Vec<u8>, Duration),
    /// Endless non-last fragments.
    Flood,
    /// Nothing.
    Nothing,
    /// Close at once.
    Close,
}

fn serve(state: &Arc<State>, mut stream: TcpStream, conn: usize) {
    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
    let _ = stream.set_nodelay(true);
    // WRITE calls carry up to 1 MiB of data.
    let mut reader = RecordReader::new(8 << 20);
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 256 * 1024];
    let mut mute = false;
    loop {
        if state.stop.load(Ordering::SeqCst) {
            return;
        }
        match stream.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(_) => return,
        }
        let (records, used) = match reader.drain(&buf) {
            Ok(x) => x,
            Err(_) => return,
        };
        buf.drain(..used);
        for rec in records {
            let out = handle_call(state, conn, &rec);
            if mute {
                continue;
            }
            let keep_going = match out {
                Output::Send(b) => stream.write_all(&b).is_ok(),
                Output::SendThenClose(b) => {
                    let _ = stream.write_all(&b);
                    let _ = stream.shutdown(Shutdown::Both);
                    false
                }
                Output::SendThenMute(b) => {
                    mute = true;
                    stream.write_all(&b).is_ok()
                }
                Output::Paced(pieces, gap) => {
                    let mut ok = true;
                    for (i, p) in pieces.iter().enumerate() {
                        if i > 0 {
                            std::thread::sleep(gap);
                        }
                        if stream.write_all(p).is_err() {
                            ok = false;
                            break;
                        }
                    }
                    ok
                }
                Output::Trickle(b, period) => {
                    let mut ok = true;
                    for byte in b {
                        if state.stop.load(Ordering::SeqCst) || stream.write_all(&[byte]).is_err() {
                            ok = false;
                            break;
                        }
                        std::thread::sleep(period);
                    }
                    ok
                }
                Output::Flood => {
                    mute = true;
                    let frag = {
                        let mut f = fragment_header(64 * 1024, false).to_vec();
                        f.resize(4 + 64 * 1024, 0x5a);
                        f
                    };
                    for _ in 0..1024 {
                        if state.stop.load(Ordering::SeqCst) || stream.write_all(&frag).is_err() {
                            break;
                        }
                    }
                    true
                }
                Output::Nothing => true,
                Output::Close => {
                    let _ = stream.shutdown(Shutdown::Both);
                    false
                }
            };
            if !keep_going {
                return;
            }
        }
    }
}

/// Decodes one call, works out the honest reply and applies the plan.
fn handle_call(state: &State, conn: usize, rec: &[u8]) -> Output {
    let mut r = XdrReader::new(rec);
    let Ok(hdr) = CallHeader::decode(&mut r) else {
        state.calls.lock().unwrap().push(Seen {
            conn,
            proc_: None,
            xid: 0,
            offset: None,
            stable: None,
            verf: None,
            path_len: None,
            faulted: false,
        });
        return Output::Nothing;
    };
    let args = r.rest();
    let proc_ = Proc::of(&hdr);
    let fault = {
        let plan = state.plan.lock().unwrap();
        match &plan.fault {
            Some(f) if Some(plan.on) == proc_ => {
                let n = state.hits.fetch_add(1, Ordering::SeqCst);
                (n < plan.times).then(|| f.clone())
            }
            _ => None,
        }
    };
    let (offset, stable) = match proc_ {
        Some(Proc::READ | Proc::WRITE) => {
            let mut a = XdrReader::new(args);
            let offset = nfs_fh3::decode(&mut a)
                .ok()
                .and_then(|_| a.u64("offset").ok());
            let _count = a.u32("count");
            let stable = (proc_ == Some(Proc::WRITE))
                .then(|| a.u32("stable").ok())
                .flatten();
            (offset, stable)
        }
        _ => (None, None),
    };
    let verf = match proc_ {
        Some(Proc::CREATE) => match nfs3::CREATE3args::decode(&mut XdrReader::new(args)) {
            Ok(nfs3::CREATE3args {
                how: createhow3::Exclusive(v),
                ..
            }) => Some(v.0),
            _ => None,
        },
        _ => None,
    };
    let path_len = match proc_ {
        Some(Proc::MNT) => XdrReader::new(args)
            .u32("dirpath length")
            .ok()
            .map(|n| n as usize),
        _ => None,
    };
    let seen = Seen {
        conn,
        proc_,
        xid: hdr.xid,
        offset,
        stable,
        verf,
        path_len,
        faulted: fault.is_some(),
    };
    state.calls.lock().unwrap().push(seen);
    let hook = state.hook.0.lock().unwrap().clone();
    let reply_delay = hook.and_then(|h| h(&Control(state), &seen));
    let xid = hdr.xid;
    let honest = match results(state, &hdr, args, fault.as_ref()) {
        Ok(res) => success(xid, &res),
        Err(stat) => reply_header(
            xid,
            ReplyBody::Accepted {
                verf: OpaqueAuth::none(),
                stat,
            },
        ),
    };
    if let Some(d) = reply_delay {
        std::thread::sleep(d);
    }
    let Some(fault) = fault else {
        return Output::Send(frame(&honest));
    };
    match fault {
        Fault::TruncatedRecordThenClose => {
            let cut = (honest.len() / 2).max(12);
            Output::SendThenClose(frame(&honest[..cut.min(honest.len())]))
        }
        Fault::CloseMidRecord => {
            let whole = frame(&honest);
            let cut = 4 + honest.len() / 2;
            Output::SendThenClose(whole[..cut].to_vec())
        }
        Fault::CloseAfterFirstFragment => {
            let half = honest.len() / 2;
            let mut b = fragment_header(half, false).to_vec();
            b.extend_from_slice(&honest[..half]);
            Output::SendThenClose(b)
        }
        Fault::CloseWithoutReply => Output::Close,
        Fault::ReplyThenClose => Output::SendThenClose(frame(&honest)),
        Fault::HugeFragment { last } => {
            let mut b = (0x7fff_ffffu32 | if last { 0x8000_0000 } else { 0 })
                .to_be_bytes()
                .to_vec();
            b.extend_from_slice(&honest);
            Output::SendThenMute(b)
        }
        Fault::FragmentFlood => Output::Flood,
        Fault::WrongXid => {
            // Another generation of the same slot: matches nothing in flight.
            let mut b = honest.clone();
            b[..4].copy_from_slice(&(xid ^ 0xffff_0000).to_be_bytes());
            Output::Send(frame(&b))
        }
        Fault::Duplicate { gap } => Output::Paced(vec![frame(&honest), frame(&honest)], gap),
        Fault::Unsolicited => {
            let mut b = Vec::new();
            // An empty record, one too short for an XID, one that is only an XID.
            b.extend_from_slice(&frame(&[]));
            b.extend_from_slice(&frame(&[1, 2, 3]));
            b.extend_from_slice(&frame(&UNSOLICITED_XID.to_be_bytes()));
            // A well-formed reply (with the honest results) to an XID never sent.
            let mut other = honest.clone();
            other[..4].copy_from_slice(&UNSOLICITED_XID.to_be_bytes());
            b.extend_from_slice(&frame(&other));
            // A CALL message where a reply should be.
            let mut call = Vec::new();
            directnfs_wire::rpc::encode_call_header(&mut call, xid ^ 0x8000_0000, 1, 1, 1, &[]);
            b.extend_from_slice(&frame(&call));
            b.extend_from_slice(&frame(&honest));
            Output::Send(b)
        }
        Fault::UnsolicitedFlood(n) => {
            let mut other = honest.clone();
            other[..4].copy_from_slice(&UNSOLICITED_XID.to_be_bytes());
            let one = frame(&other);
            let mut b = Vec::with_capacity(one.len() * (n + 1));
            for _ in 0..n {
                b.extend_from_slice(&one);
            }
            b.extend_from_slice(&frame(&honest));
            Output::Send(b)
        }
        Fault::SplitFragments { size, gap } => {
            let pieces: Vec<Vec<u8>> = honest
                .chunks(size.max(1))
                .enumerate()
                .map(|(i, c)| {
                    let last = (i + 1) * size.max(1) >= honest.len();
                    let mut p = fragment_header(c.len(), last).to_vec();
                    p.extend_from_slice(c);
                    p
                })
                .collect();
            Output::Paced(pieces, gap)
        }
        Fault::Results(res) => Output::Send(frame(&success(xid, &res))),
        Fault::Denied(rej) => Output::Send(frame(&reply_header(xid, ReplyBody::Denied(rej)))),
        Fault::Accepted(stat) => Output::Send(frame(&reply_header(
            xid,
            ReplyBody::Accepted {
                verf: OpaqueAuth::none(),
                stat,
            },
        ))),
        Fault::Silent => Output::Nothing,
        Fault::Trickle(period) => Output::Trickle(frame(&honest), period),
        // Built into the results already.
        Fault::Read(_)
        | Fault::Attrs(_)
        | Fault::Fsinfo { .. }
        | Fault::Status(_)
        | Fault::MountStatus(_)
        | Fault::WriteCount(_)
        | Fault::CommitVerifier(_)
        | Fault::Committed(_)
        | Fault::Getport(_)
        | Fault::DirCookieLoop
        | Fault::EndlessDir => Output::Send(frame(&honest)),
    }
}

/// The results of a call (after an accepted SUCCESS header), or the
/// accept_stat to refuse it with. Faults that change results apply here.
fn results(
    state: &State,
    hdr: &CallHeader,
    args: &[u8],
    fault: Option<&Fault>,
) -> Result<Vec<u8>, AcceptedReply> {
    let mut out = Vec::new();
    match (Proc::of(hdr), hdr.vers) {
        (Some(Proc::Nfs(_)), v) | (Some(Proc::Mount(_)), v) if v != 3 => {
            return Err(AcceptedReply::ProgMismatch { low: 3, high: 3 })
        }
        (Some(Proc::Pmap(_)), v) if v != portmap::PMAP_VERS => {
            return Err(AcceptedReply::ProgMismatch { low: 2, high: 2 })
        }
        (None, _) => return Err(AcceptedReply::Error(AcceptStat::PROG_UNAVAIL)),
        _ => {}
    }
    if let Some(Fault::Status(s)) = fault {
        out.put_u32(s.0);
        // Empty failure bodies: no attributes, no wcc data.
        out.put_u32(0);
        out.put_u32(0);
        return Ok(out);
    }
    if let Some(Fault::MountStatus(s)) = fault {
        mountres3::Err(*s).encode(&mut out);
        return Ok(out);
    }
    let garbage = || AcceptedReply::Error(AcceptStat::GARBAGE_ARGS);
    let mut r = XdrReader::new(args);
    match Proc::of(hdr) {
        Some(Proc::Pmap(p)) => match p {
            portmap::PMAPPROC_NULL => {}
            portmap::PMAPPROC_GETPORT => {
                let m = Mapping::decode(&mut r).map_err(|_| garbage())?;
                let port = match fault {
                    Some(Fault::Getport(p)) => *p,
                    // Registered: NFS v3 and MOUNT v3 over TCP, right here.
                    _ if m.prot == portmap::IPPROTO_TCP
                        && m.vers == 3
                        && (m.prog == nfs3::NFS_PROGRAM || m.prog == mount::MOUNT_PROGRAM) =>
                    {
                        u32::from(state.port)
                    }
                    _ => 0,
                };
                out.put_u32(port);
            }
            _ => return Err(AcceptedReply::Error(AcceptStat::PROC_UNAVAIL)),
        },
        Some(Proc::Mount(p)) => match p {
            mount::MOUNTPROC3_NULL | mount::MOUNTPROC3_UMNT => {}
            mount::MOUNTPROC3_EXPORT if state.opts.mount_any != MountAny::Off => {
                return Err(AcceptedReply::Error(AcceptStat::PROC_UNAVAIL))
            }
            mount::MOUNTPROC3_EXPORT => exports(vec![exportnode {
                ex_dir: dirpath::from(EXPORT),
                ex_groups: Vec::new(),
            }])
            .encode(&mut out),
            mount::MOUNTPROC3_MNT => {
                let path = dirpath::decode(&mut r).map_err(|_| garbage())?;
                let path = String::from_utf8_lossy(path.as_bytes()).into_owned();
                state.mnt_paths.lock().unwrap().push(path.clone());
                match mnt_handle(state, &path) {
                    Some(fh) => mountres3::Ok(mountres3_ok {
                        fhandle: nfs_fh3::new(&fh).unwrap(),
                        auth_flavors: vec![1],
                    })
                    .encode(&mut out),
                    None => mountres3::Err(mountstat3::MNT3ERR_NOENT).encode(&mut out),
                }
            }
            _ => return Err(AcceptedReply::Error(AcceptStat::PROC_UNAVAIL)),
        },
        Some(Proc::Nfs(p)) => match p {
            nfs3::NFSPROC3_NULL => {}
            nfs3::NFSPROC3_GETATTR => {
                let fh = nfs_fh3::decode(&mut r).map_err(|_| garbage())?;
                match attrs_of(state, &fh, fault) {
                    Some(a) => {
                        nfsstat3::NFS3_OK.encode(&mut out);
                        a.encode(&mut out);
                    }
                    None => nfsstat3::NFS3ERR_STALE.encode(&mut out),
                }
            }
            nfs3::NFSPROC3_LOOKUP => {
                let a = LOOKUP3args::decode(&mut r).map_err(|_| garbage())?;
                let in_root = a.what.dir.as_bytes() == ROOT_FH;
                let name = a.what.name.as_bytes();
                let found = if in_root {
                    lookup_in_root(state, name)
                } else {
                    None
                };
                let found = found.or_else(|| state.opts.lookup_any.then(|| ANY_FH.to_vec()));
                if let Some(fh) = found {
                    let fh = nfs_fh3::new(&fh).unwrap();
                    nfsstat3::NFS3_OK.encode(&mut out);
                    fh.encode(&mut out);
                    attrs_of(state, &fh, fault).encode(&mut out);
                    Some(dir_attr()).encode(&mut out);
                } else {
                    nfsstat3::NFS3ERR_NOENT.encode(&mut out);
                    Some(dir_attr()).encode(&mut out);
                }
            }
            nfs3::NFSPROC3_READ => {
                let a = READ3args::decode(&mut r).map_err(|_| garbage())?;
                read_results(state, &a, fault, &mut out);
            }
            nfs3::NFSPROC3_WRITE => {
                let a = WRITE3args::decode(&mut r).map_err(|_| garbage())?;
                // Committed exactly as asked, unless the plan says otherwise.
                let committed = match fault {
                    Some(Fault::Committed(c)) => *c,
                    _ if state.downgrade.load(Ordering::SeqCst) => nfs3::stable_how::UNSTABLE.0,
                    _ => a.stable.0,
                };
                if state.opts.store && a.file.as_bytes() == FILE_FH {
                    store(&mut state.data.lock().unwrap(), a.offset, &a.data);
                    if committed != nfs3::stable_how::UNSTABLE.0 {
                        store(&mut state.durable.lock().unwrap(), a.offset, &a.data);
                    }
                } else if state.opts.store && a.file.as_bytes().starts_with(CREATED) {
                    let mut files = state.created_data.lock().unwrap();
                    let content = files.entry(a.file.as_bytes().to_vec()).or_default();
                    store(content, a.offset, &a.data);
                }
                nfsstat3::NFS3_OK.encode(&mut out);
                out.put_u32(0); // wcc before: none
                out.put_u32(0); // wcc after: none
                let count = match fault {
                    Some(Fault::WriteCount(c)) => *c,
                    _ => a.count,
                };
                out.put_u32(count);
                out.put_u32(committed);
                out.put_opaque_fixed(&*state.verf.lock().unwrap());
            }
            nfs3::NFSPROC3_COMMIT => {
                let verf = match fault {
                    Some(Fault::CommitVerifier(v)) => *v,
                    _ => *state.verf.lock().unwrap(),
                };
                if state.opts.store {
                    let data = state.data.lock().unwrap();
                    state.durable.lock().unwrap().clone_from(&data);
                }
                nfsstat3::NFS3_OK.encode(&mut out);
                out.put_u32(0);
                out.put_u32(0);
                out.put_opaque_fixed(&verf);
            }
            nfs3::NFSPROC3_SETATTR => {
                nfsstat3::NFS3_OK.encode(&mut out);
                out.put_u32(0);
                out.put_u32(0);
            }
            nfs3::NFSPROC3_REMOVE => {
                let a = nfs3::REMOVE3args::decode(&mut r).map_err(|_| garbage())?;
                let name = a.object.name.as_bytes();
                let in_root = a.object.dir.as_bytes() == ROOT_FH;
                // Executed even if the reply is then lost (see the module doc).
                let removed = in_root && {
                    let mut f = state.file_name.lock().unwrap();
                    if f.as_deref() == Some(name) {
                        *f = None;
                        true
                    } else {
                        let fh = created_fh(name);
                        state.created_data.lock().unwrap().remove(&fh);
                        state.created.lock().unwrap().remove(name).is_some()
                    }
                };
                if removed {
                    nfsstat3::NFS3_OK.encode(&mut out);
                } else {
                    nfsstat3::NFS3ERR_NOENT.encode(&mut out);
                }
                out.put_u32(0);
                out.put_u32(0);
            }
            nfs3::NFSPROC3_RMDIR => {
                let a = nfs3::RMDIR3args::decode(&mut r).map_err(|_| garbage())?;
                let is_dir = a.object.dir.as_bytes() == ROOT_FH
                    && a.object.name.as_bytes() == DIR_NAME.as_bytes();
                // Executed even if the reply is then lost (see the module doc).
                if is_dir && state.dir_made.swap(false, Ordering::SeqCst) {
                    nfsstat3::NFS3_OK.encode(&mut out);
                } else {
                    nfsstat3::NFS3ERR_NOENT.encode(&mut out);
                }
                out.put_u32(0);
                out.put_u32(0);
            }
            nfs3::NFSPROC3_RENAME => {
                // Renames the file (only it) within the root directory.
                let a = nfs3::RENAME3args::decode(&mut r).map_err(|_| garbage())?;
                let in_root = a.from.dir.as_bytes() == ROOT_FH && a.to.dir.as_bytes() == ROOT_FH;
                let renamed = in_root && {
                    let mut f = state.file_name.lock().unwrap();
                    if f.as_deref() == Some(a.from.name.as_bytes()) {
                        *f = Some(a.to.name.as_bytes().to_vec());
                        true
                    } else {
                        false
                    }
                };
                if renamed {
                    nfsstat3::NFS3_OK.encode(&mut out);
                } else {
                    nfsstat3::NFS3ERR_NOENT.encode(&mut out);
                }
                // fromdir_wcc and todir_wcc: nothing.
                for _ in 0..4 {
                    out.put_u32(0);
                }
            }
            nfs3::NFSPROC3_CREATE => {
                let a = nfs3::CREATE3args::decode(&mut r).map_err(|_| garbage())?;
                create_results(state, &a, &mut out);
            }
            nfs3::NFSPROC3_MKDIR => {
                let a = nfs3::MKDIR3args::decode(&mut r).map_err(|_| garbage())?;
                let is_dir = a.where_.name.as_bytes() == DIR_NAME.as_bytes();
                // Executed even if the reply is then lost (see the module doc).
                if is_dir && !state.dir_made.swap(true, Ordering::SeqCst) {
                    nfsstat3::NFS3_OK.encode(&mut out);
                    out.put_u32(0); // no handle
                    out.put_u32(0); // no attributes
                } else if is_dir {
                    nfsstat3::NFS3ERR_EXIST.encode(&mut out);
                } else {
                    nfsstat3::NFS3ERR_ACCES.encode(&mut out);
                }
                out.put_u32(0);
                out.put_u32(0);
            }
            nfs3::NFSPROC3_READDIRPLUS => {
                let a = nfs3::READDIRPLUS3args::decode(&mut r).map_err(|_| garbage())?;
                readdirplus_results(state, &a, fault, &mut out);
            }
            nfs3::NFSPROC3_FSINFO => {
                let (rtmax, wtmax) = match fault {
                    Some(Fault::Fsinfo { rtmax, wtmax }) => (*rtmax, *wtmax),
                    _ => (state.opts.rtmax, state.opts.wtmax),
                };
                nfsstat3::NFS3_OK.encode(&mut out);
                FSINFO3resok {
                    obj_attributes: Some(dir_attr()),
                    rtmax,
                    rtpref: rtmax,
                    rtmult: 4096,
                    wtmax,
                    wtpref: wtmax,
                    wtmult: 4096,
                    dtpref: 64 * 1024,
                    maxfilesize: u64::MAX,
                    time_delta: nfstime3 {
                        seconds: 0,
                        nseconds: 1,
                    },
                    properties: nfs3::FSF3_HOMOGENEOUS | nfs3::FSF3_CANSETTIME,
                }
                .encode(&mut out);
            }
            _ => return Err(AcceptedReply::Error(AcceptStat::PROC_UNAVAIL)),
        },
        None => return Err(AcceptedReply::Error(AcceptStat::PROG_UNAVAIL)),
    }
    Ok(out)
}

fn read_results(state: &State, a: &READ3args, fault: Option<&Fault>, out: &mut Vec<u8>) {
    if state.opts.store && a.file.as_bytes().starts_with(CREATED) {
        let files = state.created_data.lock().unwrap();
        let d = files.get(a.file.as_bytes()).map_or(&[][..], Vec::as_slice);
        let from = (a.offset.min(d.len() as u64)) as usize;
        let n = (d.len() - from).min(a.count as usize);
        nfsstat3::NFS3_OK.encode(out);
        Some(file_attr(d.len() as u64)).encode(out);
        out.put_u32(n as u32);
        out.put_bool(from + n >= d.len());
        out.put_opaque(&d[from..from + n]);
        return;
    }
    if a.file.as_bytes() != FILE_FH {
        nfsstat3::NFS3ERR_STALE.encode(out);
        out.put_u32(0);
        return;
    }
    let stored = state.opts.store.then(|| state.data.lock().unwrap());
    let size = stored.as_ref().map_or(state.opts.size, |d| d.len() as u64);
    let avail = size.saturating_sub(a.offset).min(a.count as u64) as u32;
    let shape = match fault {
        Some(Fault::Read(s)) => *s,
        _ => ReadShape::default(),
    };
    let data_len = shape.data_len.unwrap_or(avail);
    let count = shape.count.unwrap_or(data_len);
    let eof = shape
        .eof
        .unwrap_or(a.offset.saturating_add(data_len as u64) >= size);
    nfsstat3::NFS3_OK.encode(out);
    Some(file_attr(size)).encode(out);
    out.put_u32(count);
    out.put_bool(eof);
    match &stored {
        Some(d) if shape.data_len.is_none() => {
            let from = a.offset as usize;
            out.put_opaque(&d[from..from + data_len as usize]);
        }
        _ => out.put_opaque(&pattern_at(a.offset, data_len as usize)),
    }
}

/// [`Options::store`]: puts a WRITE's data into the file (`d`: its
/// content, or its stable copy).
fn store(d: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let Some(end) = offset.checked_add(data.len() as u64) else {
        return;
    };
    if end > MAX_STORED as u64 {
        return;
    }
    let (from, end) = (offset as usize, end as usize);
    if d.len() < end {
        d.resize(end, 0);
    }
    d[from..end].copy_from_slice(data);
}

/// What MNT answers for `path`: a handle, or `None` for MNT3ERR_NOENT.
fn mnt_handle(state: &State, path: &str) -> Option<Vec<u8>> {
    match state.opts.mount_any {
        MountAny::Off => (path == EXPORT).then(|| ROOT_FH.to_vec()),
        MountAny::RootHandle => Some(ROOT_FH.to_vec()),
        MountAny::OwnHandle => {
            let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
            match parts.as_slice() {
                [] => Some(ROOT_FH.to_vec()),
                [name] => lookup_in_root(state, name.as_bytes()),
                _ => None,
            }
        }
    }
}

/// The handle of `name` in the root directory, if it exists.
fn lookup_in_root(state: &State, name: &[u8]) -> Option<Vec<u8>> {
    if state.file_name.lock().unwrap().as_deref() == Some(name) {
        Some(FILE_FH.to_vec())
    } else if name == DIR_NAME.as_bytes() && state.dir_made.load(Ordering::SeqCst) {
        Some(DIR_FH.to_vec())
    } else if state.created.lock().unwrap().contains_key(name) {
        Some(created_fh(name))
    } else {
        None
    }
}

/// Prefix of the handles of files CREATE made.
const CREATED: &[u8] = b"created:";

/// The handle of a file CREATE made.
fn created_fh(name: &[u8]) -> Vec<u8> {
    let mut fh = CREATED.to_vec();
    fh.extend_from_slice(&name[..name.len().min(56)]);
    fh
}

/// CREATE in the root directory: UNCHECKED, GUARDED and EXCLUSIVE as RFC
/// 1813 §3.3.8 says (an EXCLUSIVE retransmission matching the verifier
/// the file was made with succeeds).
fn create_results(state: &State, a: &nfs3::CREATE3args, out: &mut Vec<u8>) {
    let name = a.where_.name.as_bytes();
    let fail = |status: nfsstat3, out: &mut Vec<u8>| {
        status.encode(out);
        out.put_u32(0);
        out.put_u32(0);
    };
    if a.where_.dir.as_bytes() != ROOT_FH {
        return fail(nfsstat3::NFS3ERR_NOTDIR, out);
    }
    let is_file = state.file_name.lock().unwrap().as_deref() == Some(name);
    let is_dir = name == DIR_NAME.as_bytes() && state.dir_made.load(Ordering::SeqCst);
    let mut created = state.created.lock().unwrap();
    let fh = if is_file || is_dir || created.contains_key(name) {
        let fh = if is_file {
            FILE_FH.to_vec()
        } else if is_dir {
            DIR_FH.to_vec()
        } else {
            created_fh(name)
        };
        match &a.how {
            createhow3::Unchecked(_) => fh,
            createhow3::Exclusive(v)
                if !state.opts.forget_verifiers && created.get(name) == Some(&Some(v.0)) =>
            {
                fh
            }
            _ => return fail(nfsstat3::NFS3ERR_EXIST, out),
        }
    } else {
        let verf = match &a.how {
            createhow3::Exclusive(v) => Some(v.0),
            _ => None,
        };
        created.insert(name.to_vec(), verf);
        created_fh(name)
    };
    nfsstat3::NFS3_OK.encode(out);
    nfs3::CREATE3resok {
        obj: Some(nfs_fh3::new(&fh).unwrap()),
        obj_attributes: Some(file_attr(0)),
        dir_wcc: nfs3::wcc_data::default(),
    }
    .encode(out);
}

fn readdirplus_results(
    state: &State,
    a: &nfs3::READDIRPLUS3args,
    fault: Option<&Fault>,
    out: &mut Vec<u8>,
) {
    if a.dir.as_bytes() != ROOT_FH {
        nfsstat3::NFS3ERR_NOTDIR.encode(out);
        out.put_u32(0);
        return;
    }
    let entry = |name: &str, cookie: u64, fileid: u64| nfs3::entryplus3 {
        fileid,
        name: nfs3::filename3(name.as_bytes().to_vec()),
        cookie,
        name_attributes: None,
        name_handle: None,
    };
    let (entries, eof) = match fault {
        Some(Fault::DirCookieLoop) => (vec![entry("loop", 7, 7)], false),
        Some(Fault::EndlessDir) => (
            (1..=1000u64)
                .map(|i| {
                    let c = a.cookie + i;
                    entry(&format!("f{c:012}"), c, c)
                })
                .collect(),
            false,
        ),
        _ => {
            let mut v = vec![entry(".", 1, 1), entry("..", 2, 1)];
            if let Some(name) = state.file_name.lock().unwrap().clone() {
                v.push(entry(&String::from_utf8_lossy(&name), 3, 2));
            }
            let v: Vec<_> = v.into_iter().filter(|e| e.cookie > a.cookie).collect();
            (v, true)
        }
    };
    nfsstat3::NFS3_OK.encode(out);
    nfs3::READDIRPLUS3resok {
        dir_attributes: Some(dir_attr()),
        cookieverf: nfs3::cookieverf3(*b"cookieve"),
        reply: nfs3::dirlistplus3 { entries, eof },
    }
    .encode(out);
}

fn attrs_of(state: &State, fh: &nfs_fh3, fault: Option<&Fault>) -> Option<fattr3> {
    if let Some(Fault::Attrs(a)) = fault {
        return Some(*a);
    }
    match fh.as_bytes() {
        b if b == ROOT_FH || b == DIR_FH || b == ANY_FH => Some(dir_attr()),
        b if b == FILE_FH => Some(file_attr(if state.opts.store {
            state.data.lock().unwrap().len() as u64
        } else {
            state.opts.size
        })),
        b if b.starts_with(CREATED) => {
            let files = state.created_data.lock().unwrap();
            Some(file_attr(files.get(b).map_or(0, |d| d.len() as u64)))
        }
        _ => None,
    }
}

fn time() -> nfstime3 {
    nfstime3 {
        seconds: 1_700_000_000,
        nseconds: 0,
    }
}

/// Attributes of [`FILE`] with `size`.
pub fn file_attr(size: u64) -> fattr3 {
    fattr3 {
        type_: ftype3::NF3REG,
        mode: 0o644,
        nlink: 1,
        uid: 0,
        gid: 0,
        size,
        used: size,
        rdev: specdata3::default(),
        fsid: 1,
        fileid: 2,
        atime: time(),
        mtime: time(),
        ctime: time(),
    }
}

fn dir_attr() -> fattr3 {
    fattr3 {
        type_: ftype3::NF3DIR,
        mode: 0o755,
        nlink: 2,
        size: 4096,
        used: 4096,
        fileid: 1,
        ..file_attr(4096)
    }
}

/// Attributes no sane server sends: every field at its maximum, an
/// unknown file type, nanoseconds beyond a second.
pub fn absurd_attr() -> fattr3 {
    let t = nfstime3 {
        seconds: u32::MAX,
        nseconds: u32::MAX,
    };
    fattr3 {
        type_: ftype3(0xffff),
        mode: u32::MAX,
        nlink: u32::MAX,
        uid: u32::MAX,
        gid: u32::MAX,
        size: u64::MAX,
        used: u64::MAX,
        rdev: specdata3 {
            specdata1: u32::MAX,
            specdata2: u32::MAX,
        },
        fsid: u64::MAX,
        fileid: u64::MAX,
        atime: t,
        mtime: t,
        ctime: t,
    }
}

fn reply_header(xid: u32, body: ReplyBody) -> Vec<u8> {
    let mut out = Vec::new();
    ReplyHeader { xid, body }.encode(&mut out);
    out
}

fn success(xid: u32, results: &[u8]) -> Vec<u8> {
    let mut out = reply_header(
        xid,
        ReplyBody::Accepted {
            verf: OpaqueAuth::none(),
            stat: AcceptedReply::Success,
        },
    );
    out.extend_from_slice(results);
    out
}

/// One record, one fragment.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = fragment_header(body.len(), true).to_vec();
    out.extend_from_slice(body);
    out
}
