//! The publishing side: this process's registry of clients and the
//! endpoint that answers readers with their statistics.

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::dir;
use crate::stats::{ProcessStats, StatsSnapshot};

/// A client as the endpoint sees it: whether it is published, and its
/// statistics. The client's shared state implements it (`client.rs`), so
/// this module names no client type. Asked only when a client registers
/// and when a reader connects, never on an I/O path.
pub(crate) trait Published: Send + Sync {
    /// Whether its options let it be published (`stats=off` does not).
    fn publish_stats(&self) -> bool;
    /// Its statistics now.
    fn snapshot(self: Arc<Self>) -> StatsSnapshot;
}

/// How long a reader may take to drain one snapshot before it is dropped
/// (a stuck reader must not hold the endpoint).
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);

/// Stack of the endpoint thread: it only serialises a snapshot.
const THREAD_STACK: usize = 256 * 1024;

/// What this process publishes. One per process: a forked child, whose
/// pid differs, makes its own on first use (see [`global`]) and never
/// touches its parent's, whose thread did not survive the fork.
struct Global {
    pid: u32,
    started_unix_ms: u64,
    clients: Mutex<Vec<Weak<dyn Published>>>,
    /// The endpoint once started (`None`: publishing failed or is off).
    endpoint: OnceLock<Option<PathBuf>>,
    /// A client registered with [`register_deferred`] waits for it.
    wanted: AtomicBool,
}

static GLOBAL: AtomicPtr<Global> = AtomicPtr::new(std::ptr::null_mut());

/// The endpoint path to remove at exit, with the pid that owns it. Not
/// behind a lock: a child forked while a thread held one would find it
/// held for ever when it publishes its own endpoint. Each value is leaked
/// when replaced (the exit handler may be reading it): one per endpoint
/// made, a few per process.
static AT_EXIT: AtomicPtr<(u32, PathBuf)> = AtomicPtr::new(std::ptr::null_mut());

/// This process's [`Global`], made on first use in each process. Not on
/// any I/O path: called when a client mounts and when a reader asks.
fn global() -> &'static Global {
    let me = std::process::id();
    let p = GLOBAL.load(Ordering::Acquire);
    // SAFETY: a non-null GLOBAL points to a leaked Box, never freed.
    if let Some(g) = unsafe { p.as_ref() } {
        if g.pid == me {
            return g;
        }
    }
    let fresh = Box::into_raw(Box::new(Global {
        pid: me,
        started_unix_ms: unix_ms(),
        clients: Mutex::new(Vec::new()),
        endpoint: OnceLock::new(),
        wanted: AtomicBool::new(false),
    }));
    match GLOBAL.compare_exchange(p, fresh, Ordering::AcqRel, Ordering::Acquire) {
        // SAFETY: just leaked above; the old one (a parent's) is leaked too:
        // it may still be referenced by code that ran before the fork.
        Ok(_) => unsafe { &*fresh },
        Err(current) => {
            // Another thread of this process won the race: use its Global.
            // SAFETY: `fresh` was never shared; `current` is a leaked Box.
            unsafe {
                drop(Box::from_raw(fresh));
                &*current
            }
        }
    }
}

/// Adds a freshly mounted client to this process's endpoint, starting the
/// endpoint with the first one. Does nothing when the client's options
/// (`stats=off`) or the environment (`DIRECTNFS_STATS=off`) say so.
pub(crate) fn register<C: Published + 'static>(inner: &Arc<C>) {
    register_with(inner, start);
}

/// As [`register`], for a client made in the child of `fork` (a new
/// PostgreSQL backend): the client is listed, but the endpoint starts only
/// at [`start_deferred`], which the client's transport calls when its own
/// threads start (at the latest when it has lived a second and makes a
/// call: `io/transport/threads.rs`). A child that makes a few calls and
/// exits never publishes: `dnfs stats` does not see it.
pub(crate) fn register_deferred<C: Published + 'static>(inner: &Arc<C>) {
    if listed(inner) {
        global().wanted.store(true, Ordering::Release);
    }
}

/// Starts the endpoint of a process whose clients were registered with
/// [`register_deferred`]. Its own thread sets it up (the directory check,
/// the removal of stale endpoints, the bind and the rename), so none of
/// that is on the way of the call that started it. A reader may miss the
/// process for the moment that takes.
pub(crate) fn start_deferred() {
    let g = global();
    if g.wanted.load(Ordering::Acquire) {
        init_endpoint(g, start_in_thread);
    }
}

fn register_with<C: Published + 'static>(
    inner: &Arc<C>,
    start: fn(&'static Global) -> io::Result<PathBuf>,
) {
    if listed(inner) {
        init_endpoint(global(), start);
    }
}

/// Adds `inner` to this process's clients, unless publishing is off for
/// it; says whether it was.
fn listed<C: Published + 'static>(inner: &Arc<C>) -> bool {
    if !inner.publish_stats() || disabled_by_env() {
        return false;
    }
    let g = global();
    let mut clients = g.clients.lock().unwrap_or_else(|p| p.into_inner());
    clients.retain(|w| w.strong_count() > 0);
    let weak: Weak<C> = Arc::downgrade(inner);
    clients.push(weak);
    true
}

fn init_endpoint(g: &'static Global, start: fn(&'static Global) -> io::Result<PathBuf>) {
    g.endpoint.get_or_init(|| match start(g) {
        Ok(path) => Some(path),
        Err(e) => {
            tracing::warn!("statistics not published: {e}");
            None
        }
    });
}

fn disabled_by_env() -> bool {
    std::env::var("DIRECTNFS_STATS").is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "off" | "0" | "no" | "false"
        )
    })
}

/// The statistics of every live client of this process, as its endpoint
/// publishes them.
pub fn process_stats() -> ProcessStats {
    let g = global();
    let clients: Vec<Arc<dyn Published>> = g
        .clients
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    let mut stats = StatsSnapshot::default();
    for inner in clients {
        let s = inner.snapshot();
        stats.servers.extend(s.servers);
        stats.files.extend(s.files);
    }
    ProcessStats {
        pid: g.pid,
        uid: euid(),
        program: program_name(),
        started_unix_ms: g.started_unix_ms,
        taken_unix_ms: unix_ms(),
        stats,
        alerts: crate::alert::recent(),
    }
}

/// Makes the endpoint (see the module doc) and its thread.
fn start(g: &'static Global) -> io::Result<PathBuf> {
    let (path, listener) = crate::fdfloor::making(|| bind(g))?;
    crate::signals::spawn_with_stack(STATS_THREAD, THREAD_STACK, move || serve(&listener))?;
    Ok(path)
}

/// Starts the endpoint's thread, which makes the endpoint, then serves it.
/// Returns the path it will have.
fn start_in_thread(g: &'static Global) -> io::Result<PathBuf> {
    let path = dir::socket_path(&dir::process_dir(euid()), g.pid, 1);
    crate::signals::spawn_with_stack(STATS_THREAD, THREAD_STACK, move || {
        match crate::fdfloor::making(|| bind(g)) {
            Ok((_, listener)) => serve(&listener),
            Err(e) => tracing::warn!("statistics not published: {e}"),
        }
    })?;
    Ok(path)
}

/// The endpoint's thread (it only serialises a snapshot: `THREAD_STACK`).
const STATS_THREAD: &str = "dnfs-stats";

/// Makes the endpoint: the private directory, the listening socket in
/// place, its removal at exit.
fn bind(g: &'static Global) -> io::Result<(PathBuf, UnixListener)> {
    let uid = euid();
    let dir = dir::process_dir(uid);
    dir::ensure_private_dir(&dir, uid)?;
    super::reader::remove_stale(&dir);
    // Bound under a temporary name and linked into place once listening:
    // a reader never sees a PID.sock that refuses connections unless its
    // process is gone (which is how readers tell a stale endpoint). The
    // address of this copy of the library (`Global`) makes the name
    // unique among the copies a process may hold.
    let tmp = dir.join(format!(
        ".{}.{}.{:x}.tmp",
        g.pid,
        unix_ms(),
        g as *const Global as usize
    ));
    let _ = std::fs::remove_file(&tmp);
    let listener = crate::fdfloor::made(|| UnixListener::bind(&tmp))?;
    let placed = std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))
        .and_then(|()| place(&dir, g.pid, &tmp));
    let _ = std::fs::remove_file(&tmp);
    let path = placed?;
    remove_at_exit(g.pid, &path);
    Ok((path, listener))
}

/// Copies of the library one process may publish from (`PID.sock`,
/// `PID.2.sock`, ...).
const MAX_COPIES: u32 = 16;

/// Links the listening socket `tmp` to this process's first free endpoint
/// name and returns it. A name whose socket answers from this process
/// belongs to another copy of the library here (a program may link the C
/// library and load the SQLite extension, each with its own copy): the
/// next name is tried, so that every copy's clients are seen (readers
/// merge a process's endpoints). A name nobody answers on is a dead
/// process's (one with our pid, before us): it is replaced.
fn place(dir: &Path, pid: u32, tmp: &Path) -> io::Result<PathBuf> {
    for copy in 1..=MAX_COPIES {
        let path = dir::socket_path(dir, pid, copy);
        for _ in 0..2 {
            match std::fs::hard_link(tmp, &path) {
                Ok(()) => return Ok(path),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
            match UnixStream::connect(&path) {
                // Another copy of the library in this process (or, with a
                // pid of another pid namespace, someone else): taken.
                Ok(_) => break,
                Err(_) => {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
    }
    Err(io::Error::other(format!(
        "{MAX_COPIES} copies of directnfs already publish for pid {pid}"
    )))
}

/// Answers readers, one at a time, for the life of the process. The
/// wait for a reader is a `poll`; the accept, which makes a descriptor,
/// does not wait (a descriptor floor's window must stay short,
/// fdfloor.rs).
fn serve(listener: &UnixListener) {
    let me = euid();
    if let Err(e) = listener.set_nonblocking(true) {
        tracing::warn!("statistics not published: {e}");
        return;
    }
    loop {
        wait_readable(listener);
        match crate::fdfloor::made(|| listener.accept().map(|(s, _)| s)) {
            Ok(stream) => {
                // The accepted socket is blocking (accept does not pass
                // O_NONBLOCK on); answer sets a write timeout.
                if let Err(e) = answer(stream, me) {
                    tracing::debug!("statistics reader: {e}");
                }
            }
            // The reader went away before the accept.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            // Out of descriptors or memory: wait rather than spin.
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Waits until `listener` has a connection to accept (or `poll` fails,
/// which the accept then reports).
fn wait_readable(listener: &UnixListener) {
    let mut fd = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd, valid for the call.
    while unsafe { libc::poll(&mut fd, 1, -1) } < 0
        && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
    {}
}

fn answer(stream: UnixStream, me: u32) -> io::Result<()> {
    let peer = peer_uid(&stream)?;
    if peer != me && peer != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("uid {peer} may not read the statistics of uid {me}"),
        ));
    }
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let body = serde_json::to_vec(&process_stats()).map_err(io::Error::other)?;
    crate::io::socket::send_all(&stream, &body)?;
    stream.shutdown(std::net::Shutdown::Write)
}

/// The effective uid of the process at the other end (`SO_PEERCRED`, as
/// it was when it connected).
fn peer_uid(stream: &UnixStream) -> io::Result<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: u32::MAX,
        gid: u32::MAX,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of the sizes given;
    // the descriptor is the live socket `stream` owns.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred.uid)
}

/// Removes the endpoint when the process calls `exit` (C programs,
/// `std::process::exit`, returning from `main`). A process killed by a
/// signal leaves it; readers remove it then.
fn remove_at_exit(pid: u32, path: &Path) {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    let entry = Box::into_raw(Box::new((pid, path.to_path_buf())));
    // The previous entry is leaked, never freed (see AT_EXIT).
    let _ = AT_EXIT.swap(entry, Ordering::AcqRel);
    REGISTERED.call_once(|| {
        // SAFETY: `unlink_endpoint` is an `extern "C" fn()` that never
        // unwinds; atexit only stores the pointer.
        unsafe { libc::atexit(unlink_endpoint) };
    });
}

extern "C" fn unlink_endpoint() {
    let entry = AT_EXIT.load(Ordering::Acquire);
    if entry.is_null() {
        return;
    }
    // SAFETY: set only from a leaked Box, never freed.
    let (pid, path) = unsafe { &*entry };
    // After a fork, the child inherits this handler and the parent's path:
    // only the process that made the endpoint removes it.
    if *pid == std::process::id() {
        let _ = std::fs::remove_file(path);
    }
}

fn euid() -> u32 {
    // SAFETY: geteuid takes nothing and cannot fail.
    unsafe { libc::geteuid() }
}

fn program_name() -> String {
    crate::fdfloor::making(|| std::fs::read_to_string("/proc/self/comm"))
        .map(|s| s.trim_end().to_owned())
        .unwrap_or_default()
}

pub(crate) fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
