//! libnfs, the established user-space NFS client, loaded at run time from
//! `libnfs.so.13` (Debian's `libnfs13`, libnfs 4.0): no build-time
//! dependency. One `nfs_context` per session (libnfs is not thread-safe;
//! one context = one TCP connection), mounted and opened with the sync
//! calls, then driven with the asynchronous API: `nfs_pread_async` /
//! `nfs_pwrite_async` keep `depth` I/Os in flight, and the loop is
//! `poll(nfs_get_fd, nfs_which_events)` + `nfs_service`, as libnfs's own
//! examples do. The file is opened `O_RDWR|O_SYNC`: without O_SYNC libnfs
//! writes UNSTABLE, and directnfs writes FILE_SYNC by default.

use std::cell::UnsafeCell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use libloading::Library;

use super::{alloc_buf, Done, Kind, Session};
use crate::bench::job::Job;

const SONAME: &str = "libnfs.so.13";
/// Overrides the library loaded (tests use it to exercise the "not
/// installed" path; anything else must have the libnfs 4.0 ABI).
const SONAME_ENV: &str = "DNFS_BENCH_LIBNFS";

type NfsCb = unsafe extern "C" fn(c_int, *mut c_void, *mut c_void, *mut c_void);

#[repr(C)]
struct NfsUrl {
    server: *mut c_char,
    path: *mut c_char,
    file: *mut c_char,
}

/// The libnfs functions used, resolved once per process.
struct Api {
    _lib: Library,
    init_context: unsafe extern "C" fn() -> *mut c_void,
    destroy_context: unsafe extern "C" fn(*mut c_void),
    parse_url_dir: unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut NfsUrl,
    destroy_url: unsafe extern "C" fn(*mut NfsUrl),
    mount: unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char) -> c_int,
    open: unsafe extern "C" fn(*mut c_void, *const c_char, c_int, *mut *mut c_void) -> c_int,
    close: unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int,
    pread_async:
        unsafe extern "C" fn(*mut c_void, *mut c_void, u64, u64, NfsCb, *mut c_void) -> c_int,
    pwrite_async: unsafe extern "C" fn(
        *mut c_void,
        *mut c_void,
        u64,
        u64,
        *const c_void,
        NfsCb,
        *mut c_void,
    ) -> c_int,
    get_fd: unsafe extern "C" fn(*mut c_void) -> c_int,
    which_events: unsafe extern "C" fn(*mut c_void) -> c_int,
    service: unsafe extern "C" fn(*mut c_void, c_int) -> c_int,
    get_error: unsafe extern "C" fn(*mut c_void) -> *mut c_char,
}

static API: OnceLock<Result<Arc<Api>, String>> = OnceLock::new();

fn api() -> Result<Arc<Api>, String> {
    API.get_or_init(|| load().map(Arc::new)).clone()
}

/// Whether libnfs can be loaded here; the error says why not.
pub fn probe() -> Result<(), String> {
    api().map(|_| ())
}

fn load() -> Result<Api, String> {
    let name = std::env::var(SONAME_ENV).unwrap_or_else(|_| SONAME.to_string());
    // SAFETY: loading a system library whose initialisers are benign.
    let lib = unsafe { Library::new(&name) }.map_err(|e| {
        format!("{name} not found ({e}); install Debian's libnfs13 to compare with libnfs")
    })?;
    macro_rules! sym {
        ($name:literal) => {{
            // SAFETY: the type matches the C prototype in libnfs 4.0's
            // <nfsc/libnfs.h>; the pointer stays valid while `_lib` lives.
            let s = unsafe { lib.get($name) }.map_err(|e| {
                format!(
                    "{name}: missing {}: {e}",
                    String::from_utf8_lossy(&$name[..$name.len() - 1])
                )
            })?;
            *s
        }};
    }
    Ok(Api {
        init_context: sym!(b"nfs_init_context\0"),
        destroy_context: sym!(b"nfs_destroy_context\0"),
        parse_url_dir: sym!(b"nfs_parse_url_dir\0"),
        destroy_url: sym!(b"nfs_destroy_url\0"),
        mount: sym!(b"nfs_mount\0"),
        open: sym!(b"nfs_open\0"),
        close: sym!(b"nfs_close\0"),
        pread_async: sym!(b"nfs_pread_async\0"),
        pwrite_async: sym!(b"nfs_pwrite_async\0"),
        get_fd: sym!(b"nfs_get_fd\0"),
        which_events: sym!(b"nfs_which_events\0"),
        service: sym!(b"nfs_service\0"),
        get_error: sym!(b"nfs_get_error\0"),
        _lib: lib,
    })
}

/// Per-slot state the callback reaches through `private_data`.
struct Slot {
    index: usize,
    kind: Kind,
    buf: *mut u8,
    cap: usize,
    done: *const UnsafeCell<Vec<Done>>,
}

pub struct LibnfsSession {
    api: Arc<Api>,
    ctx: *mut c_void,
    fh: *mut c_void,
    bufs: Vec<Box<[u8]>>,
    /// Boxed so the pointers handed to libnfs stay put.
    slots: Box<[UnsafeCell<Slot>]>,
    done: Box<UnsafeCell<Vec<Done>>>,
    in_flight: usize,
}

impl std::fmt::Debug for LibnfsSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LibnfsSession")
            .field("depth", &self.bufs.len())
            .field("in_flight", &self.in_flight)
            .finish()
    }
}

fn cstr(s: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("NUL byte in {s:?}"))
}

impl LibnfsSession {
    pub fn open(job: &Job, depth: usize, buf_len: usize) -> Result<Self, String> {
        let api = api()?;
        let loc = &job.loc;
        let host = loc.host.as_deref().ok_or("libnfs needs --target")?;
        let export = loc.export.as_deref().ok_or("libnfs: export unknown")?;
        let rel = loc.rel_path.as_deref().ok_or("libnfs: file path unknown")?;
        // Only the options libnfs 4.0 understands; ports explicit so the
        // portmapper is never asked.
        let mut q = Vec::new();
        if let Some(p) = loc.nfs_port {
            q.push(format!("nfsport={p}"));
        }
        if let Some(p) = loc.mount_port {
            q.push(format!("mountport={p}"));
        }
        if let Some(u) = loc.uid {
            q.push(format!("uid={u}"));
        }
        if let Some(g) = loc.gid {
            q.push(format!("gid={g}"));
        }
        let host_part = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        let mut url = format!("nfs://{host_part}{export}");
        if !q.is_empty() {
            url.push('?');
            url.push_str(&q.join("&"));
        }
        // SAFETY: plain C calls on a context we own; every pointer passed is
        // valid for the call; the URL struct is freed once.
        unsafe {
            let ctx = (api.init_context)();
            if ctx.is_null() {
                return Err("nfs_init_context failed".into());
            }
            let mut me = Self {
                api: Arc::clone(&api),
                ctx,
                fh: std::ptr::null_mut(),
                bufs: Vec::new(),
                slots: Box::new([]),
                done: Box::new(UnsafeCell::new(Vec::with_capacity(depth))),
                in_flight: 0,
            };
            let curl = cstr(&url)?;
            let u = (api.parse_url_dir)(ctx, curl.as_ptr());
            if u.is_null() {
                return Err(format!("libnfs: bad URL {url}: {}", me.error()));
            }
            let server = CStr::from_ptr((*u).server).to_owned();
            let path = CStr::from_ptr((*u).path).to_owned();
            (api.destroy_url)(u);
            if (api.mount)(ctx, server.as_ptr(), path.as_ptr()) != 0 {
                return Err(format!("libnfs: mount {url}: {}", me.error()));
            }
            let crel = cstr(rel)?;
            let mut fh = std::ptr::null_mut();
            if (api.open)(ctx, crel.as_ptr(), libc::O_RDWR | libc::O_SYNC, &mut fh) != 0 {
                return Err(format!("libnfs: open {rel}: {}", me.error()));
            }
            me.fh = fh;
            me.bufs = (0..depth).map(|_| alloc_buf(buf_len)).collect();
            let done: *const UnsafeCell<Vec<Done>> = &*me.done;
            me.slots = me
                .bufs
                .iter_mut()
                .enumerate()
                .map(|(index, b)| {
                    UnsafeCell::new(Slot {
                        index,
                        kind: Kind::Read,
                        buf: b.as_mut_ptr(),
                        cap: b.len(),
                        done,
                    })
                })
                .collect();
            Ok(me)
        }
    }

    fn error(&self) -> String {
        // SAFETY: the context is valid; libnfs returns NULL or a C string it owns.
        unsafe {
            let p = (self.api.get_error)(self.ctx);
            if p.is_null() {
                "unknown error".into()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        }
    }

    /// One poll + nfs_service round.
    fn service(&mut self, timeout: Duration) -> Result<(), String> {
        // SAFETY: valid context; pollfd lives on the stack for the call.
        unsafe {
            let mut pfd = libc::pollfd {
                fd: (self.api.get_fd)(self.ctx),
                events: (self.api.which_events)(self.ctx) as libc::c_short,
                revents: 0,
            };
            let ms = timeout.as_millis().min(i32::MAX as u128) as c_int;
            let n = libc::poll(&mut pfd, 1, ms);
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    return Ok(());
                }
                return Err(format!("poll: {e}"));
            }
            if (self.api.service)(self.ctx, c_int::from(pfd.revents)) < 0 {
                return Err(format!("libnfs: nfs_service: {}", self.error()));
            }
        }
        Ok(())
    }
}

/// The completion callback. `err` is the byte count (>= 0) or -errno;
/// for reads `data` points at the bytes (libnfs 4.0 owns them: copy).
unsafe extern "C" fn on_done(
    err: c_int,
    _nfs: *mut c_void,
    data: *mut c_void,
    private: *mut c_void,
) {
    // SAFETY: `private` is the `Slot` given at submission, alive for the
    // session; only the session's thread runs callbacks (inside nfs_service).
    let slot = unsafe { &*(private as *const Slot) };
    let result = if err < 0 {
        Err(format!(
            "libnfs: {}",
            std::io::Error::from_raw_os_error(-err)
        ))
    } else {
        let n = err as usize;
        if slot.kind == Kind::Read && n > 0 && !data.is_null() {
            let n = n.min(slot.cap);
            // SAFETY: libnfs gives `err` readable bytes at `data`; the slot
            // buffer has `cap` bytes and is not otherwise in use.
            unsafe { std::ptr::copy_nonoverlapping(data as *const u8, slot.buf, n) };
        }
        Ok(n)
    };
    // SAFETY: single-threaded access from the session thread.
    unsafe { (*(*slot.done).get()).push((slot.index, result)) };
}

impl Session for LibnfsSession {
    fn depth(&self) -> usize {
        self.bufs.len()
    }

    fn buf(&mut self, slot: usize) -> &mut [u8] {
        &mut self.bufs[slot]
    }

    fn submit(&mut self, slot: usize, kind: Kind, offset: u64, len: usize) -> Result<(), String> {
        let s = self.slots.get(slot).ok_or("bad slot")?.get();
        // SAFETY: the slot is idle (the driver submits only on free slots),
        // so nothing else references it; the buffer outlives the I/O.
        let rc = unsafe {
            (*s).kind = kind;
            match kind {
                Kind::Read => (self.api.pread_async)(
                    self.ctx,
                    self.fh,
                    offset,
                    len as u64,
                    on_done,
                    s as *mut c_void,
                ),
                Kind::Write => (self.api.pwrite_async)(
                    self.ctx,
                    self.fh,
                    offset,
                    len as u64,
                    (*s).buf as *const c_void,
                    on_done,
                    s as *mut c_void,
                ),
            }
        };
        if rc != 0 {
            return Err(format!("libnfs: submit: {}", self.error()));
        }
        self.in_flight += 1;
        Ok(())
    }

    fn fsync(&mut self) -> Result<(), String> {
        Err("libnfs engine: --fsync-every is not supported".into())
    }

    fn reap(&mut self, out: &mut Vec<Done>, min: usize, timeout: Duration) -> Result<(), String> {
        let deadline = std::time::Instant::now() + timeout;
        let min = min.clamp(1, self.in_flight.max(1));
        loop {
            // SAFETY: callbacks only run inside `service`, on this thread.
            let done = unsafe { &mut *self.done.get() };
            if done.len() >= min {
                self.in_flight -= done.len().min(self.in_flight);
                out.append(done);
                return Ok(());
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                self.in_flight -= done.len().min(self.in_flight);
                out.append(done);
                return Ok(());
            }
            self.service(deadline - now)?;
        }
    }
}

impl Drop for LibnfsSession {
    fn drop(&mut self) {
        // Finish what is in flight (its callbacks point into our slots).
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut sink = Vec::new();
        while self.in_flight > 0 && std::time::Instant::now() < deadline {
            if self.reap(&mut sink, 1, Duration::from_millis(100)).is_err() {
                break;
            }
        }
        // SAFETY: context and handle are ours; destroyed once.
        unsafe {
            if !self.fh.is_null() {
                (self.api.close)(self.ctx, self.fh);
            }
            (self.api.destroy_context)(self.ctx);
        }
    }
}
