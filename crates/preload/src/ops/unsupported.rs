//! What cannot be served, refused with a clear errno and one warning per
//! kind on stderr:
//!
//! * `mmap` of an NFS descriptor: `ENODEV` (there is no page cache to
//!   map; a `MAP_PRIVATE` copy on request, see mapped.rs);
//! * libaio `io_submit` with an iocb on an NFS descriptor: `-EOPNOTSUPP`
//!   before anything is submitted;
//! * POSIX AIO (`aio_read`, `aio_write`, `aio_fsync`, `lio_listio`) on an
//!   NFS descriptor: `EOPNOTSUPP`;
//! * io_uring submissions made through libc's `syscall(2)` with an SQE on
//!   an NFS descriptor: `EBADF`, nothing submitted; registering an NFS
//!   descriptor as a fixed file the same way: `EBADF`. Most io_uring users
//!   (liburing, fio's engine) enter the kernel with their own system call
//!   instructions, which no preloaded library sees: for them the library
//!   notices the ring when it is mapped (through libc's `mmap`) and says
//!   once, as soon as the same process also has NFS descriptors, that
//!   io_uring I/O on those does not reach the server. (Reads of it see an
//!   empty file; writes land in the placeholder and `close` reports them.)

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use libc::{c_int, c_long, c_void};

use crate::fail::{Errno, Res};
use crate::fdtable;
use crate::warn;

/// libaio `io_submit`: the first iocb on an NFS descriptor, if any.
///
/// # Safety
/// `iocbs` points to `nr` iocb pointers (as libaio requires).
pub unsafe fn io_submit_refused(nr: c_long, iocbs: *mut *mut c_void) -> bool {
    if iocbs.is_null() || nr <= 0 {
        return false;
    }
    for i in 0..nr as usize {
        // SAFETY: per the contract; `aio_fildes` is at byte 20 of struct
        // iocb (linux/aio_abi.h: u64 data, u32 key, u32 rw_flags, u16
        // opcode, s16 reqprio, u32 fildes).
        let fd = unsafe {
            let cb = *iocbs.add(i);
            if cb.is_null() {
                continue;
            }
            *((cb as *const u8).add(20) as *const u32) as c_int
        };
        if fdtable::is_nfs(fd) {
            warn::once("io_submit", || {
                format!(
                    "libaio io_submit on NFS descriptor {fd} refused (EOPNOTSUPP): asynchronous \
                     kernel I/O cannot reach directnfs; use a synchronous engine (psync, pvsync)"
                )
            });
            return true;
        }
    }
    false
}

/// POSIX AIO on `fd`: refused when it is an NFS descriptor.
pub fn check_posix_aio(fd: c_int, call: &'static str) -> Res<()> {
    if fdtable::is_nfs(fd) {
        warn::once("posix aio", || {
            format!("{call} on NFS descriptor {fd} refused (EOPNOTSUPP): POSIX AIO runs in glibc's own threads, which this library cannot see")
        });
        return Err(Errno(libc::EOPNOTSUPP));
    }
    Ok(())
}

/// What is known of one io_uring ring (by ring descriptor).
#[derive(Debug, Clone, Copy, Default)]
pub struct Ring {
    /// `io_sqring_offsets` from `io_uring_setup`: head, tail, mask, array.
    head: u32,
    tail: u32,
    mask: u32,
    array: u32,
    /// SQEs of 128 bytes (`IORING_SETUP_SQE128`).
    big: bool,
    sq_ring: usize,
    sqes: usize,
}

static RINGS: Mutex<Option<HashMap<c_int, Ring>>> = Mutex::new(None);

/// The io_uring rings tracked, locked (held around `fork`: fork.rs).
pub fn lock_rings() -> MutexGuard<'static, Option<HashMap<c_int, Ring>>> {
    RINGS.lock().unwrap_or_else(|p| p.into_inner())
}
/// Set once a ring is tracked: `close` consults [`RINGS`] only then.
static ANY_RING: AtomicBool = AtomicBool::new(false);

const IORING_SETUP_SQPOLL: u32 = 1 << 1;
const IORING_SETUP_SQE128: u32 = 1 << 10;
const IORING_OFF_SQ_RING: i64 = 0;
const IORING_OFF_CQ_RING: i64 = 0x0800_0000;
const IORING_OFF_SQES: i64 = 0x1000_0000;
const IOSQE_FIXED_FILE: u8 = 1;
const IORING_REGISTER_FILES: c_long = 2;
const IORING_REGISTER_FILES_UPDATE: c_long = 6;

/// After `io_uring_setup` returned `ring` for `params`.
///
/// # Safety
/// `params` is the `struct io_uring_params` the kernel filled.
pub unsafe fn uring_setup(ring: c_int, params: *const u8) {
    if ring < 0 || params.is_null() || crate::state::get().is_none() {
        return;
    }
    // SAFETY: struct io_uring_params: sq_entries, cq_entries, flags,
    // sq_thread_cpu, sq_thread_idle, features, wq_fd, resv[3] (40 bytes),
    // then io_sqring_offsets: head, tail, ring_mask, ring_entries, flags,
    // dropped, array.
    let word = |i: usize| unsafe { *(params.add(i * 4) as *const u32) };
    let flags = word(2);
    if flags & IORING_SETUP_SQPOLL != 0 {
        warn::once("sqpoll", || {
            "an io_uring with SQPOLL was set up: its submissions are not checked; I/O it does \
             on NFS descriptors reaches the local placeholder files, not the server"
                .into()
        });
    }
    let ring_info = Ring {
        head: word(10),
        tail: word(11),
        mask: word(12),
        array: word(16),
        big: flags & IORING_SETUP_SQE128 != 0,
        sq_ring: 0,
        sqes: 0,
    };
    let mut rings = RINGS.lock().unwrap_or_else(|p| p.into_inner());
    rings
        .get_or_insert_with(HashMap::new)
        .insert(ring, ring_info);
    ANY_RING.store(true, Ordering::Relaxed);
}

/// Set once an io_uring ring was mapped in this process.
static RING_MAPPED: AtomicBool = AtomicBool::new(false);

/// After a successful `mmap` of `fd` at `off` mapped at `addr`: notices
/// io_uring rings, and records where a tracked ring's queue and entries
/// are.
pub fn uring_mapped(fd: c_int, off: i64, addr: *mut c_void) {
    if fd < 0 {
        return;
    }
    let ring_offset = matches!(
        off,
        IORING_OFF_SQ_RING | IORING_OFF_CQ_RING | IORING_OFF_SQES
    );
    if ring_offset
        && !RING_MAPPED.load(Ordering::Relaxed)
        && crate::state::get().is_some()
        && is_ring(fd)
    {
        RING_MAPPED.store(true, Ordering::Relaxed);
        if fdtable::any() {
            warn_ring_and_nfs();
        }
    }
    if !ANY_RING.load(Ordering::Relaxed) {
        return;
    }
    let mut rings = RINGS.lock().unwrap_or_else(|p| p.into_inner());
    let Some(r) = rings.as_mut().and_then(|m| m.get_mut(&fd)) else {
        return;
    };
    match off {
        IORING_OFF_SQ_RING => r.sq_ring = addr as usize,
        IORING_OFF_SQES => r.sqes = addr as usize,
        _ => {}
    }
}

/// `io_uring_enter(ring, to_submit)`: true if an SQE to be submitted names
/// an NFS descriptor.
pub fn uring_enter_refused(ring: c_int, to_submit: u32) -> bool {
    if to_submit == 0 {
        return false;
    }
    let r = {
        let rings = RINGS.lock().unwrap_or_else(|p| p.into_inner());
        match rings.as_ref().and_then(|m| m.get(&ring)) {
            Some(r) if r.sq_ring != 0 && r.sqes != 0 => *r,
            _ => return false,
        }
    };
    // SAFETY: the ring's shared memory, mapped by the program and
    // described by the kernel's offsets; head is the kernel's (read
    // atomically), tail the program's.
    unsafe {
        let at = |off: u32| (r.sq_ring + off as usize) as *const u32;
        let head = std::ptr::read_volatile(at(r.head));
        let tail = std::ptr::read_volatile(at(r.tail));
        let mask = *at(r.mask);
        let array = at(r.array);
        let size = if r.big { 128 } else { 64 };
        let mut i = head;
        let mut n = 0;
        while i != tail && n < to_submit {
            let idx = *array.add((i & mask) as usize) as usize;
            let sqe = (r.sqes + idx * size) as *const u8;
            let flags = *sqe.add(1);
            let fd = *(sqe.add(4) as *const i32);
            if flags & IOSQE_FIXED_FILE == 0 && fdtable::is_nfs(fd) {
                warn::once("io_uring", || {
                    format!(
                        "io_uring submission on NFS descriptor {fd} refused (EBADF): the kernel \
                         cannot reach directnfs; use a synchronous engine (psync, pvsync)"
                    )
                });
                return true;
            }
            i = i.wrapping_add(1);
            n += 1;
        }
    }
    false
}

/// `io_uring_register`: registering NFS descriptors as fixed files is
/// refused.
///
/// # Safety
/// For the file commands, `arg` points to `nr` descriptors.
pub unsafe fn uring_register_refused(opcode: c_long, arg: *const c_void, nr: c_long) -> bool {
    let fds: *const i32 = match opcode {
        IORING_REGISTER_FILES => arg.cast(),
        // struct io_uring_files_update { u32 offset; u32 resv; u64 fds; }
        // SAFETY: per the contract.
        IORING_REGISTER_FILES_UPDATE if !arg.is_null() => unsafe {
            *((arg as *const u8).add(8) as *const u64) as usize as *const i32
        },
        _ => return false,
    };
    if fds.is_null() || nr <= 0 {
        return false;
    }
    for i in 0..nr as usize {
        // SAFETY: per the contract.
        let fd = unsafe { *fds.add(i) };
        if fdtable::is_nfs(fd) {
            warn::once("io_uring register", || {
                format!("io_uring cannot use NFS descriptor {fd} as a fixed file (EBADF)")
            });
            return true;
        }
    }
    false
}

/// After an NFS descriptor was opened: if this process also has an
/// io_uring, says (once) that io_uring I/O does not reach NFS.
pub fn opened_nfs() {
    if RING_MAPPED.load(Ordering::Relaxed) {
        warn_ring_and_nfs();
    }
}

/// Environment variable: `allow` lets programs set up kernel asynchronous
/// I/O — libaio contexts and liburing rings — in a process this library
/// serves ([`kernel_aio_allowed`]).
pub const ENV_KERNEL_AIO: &str = "DIRECTNFS_PRELOAD_KERNEL_AIO";

/// Whether a libaio context or a liburing ring may be set up (by `call`:
/// `io_setup`, `io_uring_queue_init` and its forms) in this process.
///
/// liburing enters the kernel with its own instructions (Debian 12's
/// liburing maps its rings that way too), so nothing its rings submit is
/// seen here: I/O on NFS descriptors would silently reach the placeholder
/// files, a database's writes lost (MariaDB's InnoDB writes through
/// liburing by default). libaio's submissions are checked (`io_submit`
/// refuses NFS descriptors), but a database given that refusal for every
/// write retries forever (InnoDB does). So in a process this library
/// serves both set-ups are refused with `ENOSYS`, which programs take as
/// "no kernel AIO here": InnoDB falls back to its simulated AIO (`pread`
/// and `pwrite` in threads, served). `DIRECTNFS_PRELOAD_KERNEL_AIO=allow`
/// keeps them for a program that uses them on local files only; then
/// `io_submit` still refuses NFS descriptors and a liburing ring still
/// brings the warning of [`opened_nfs`].
pub fn kernel_aio_allowed(call: &'static str) -> bool {
    match crate::state::get() {
        None => return true,
        Some(state) if state.kernel_aio => return true,
        Some(_) => {}
    }
    warn::once("kernel aio", || {
        format!(
            "{call} refused (ENOSYS): kernel asynchronous I/O (libaio, io_uring) on NFS \
             descriptors cannot reach the server; the program falls back to other I/O or \
             stops ({ENV_KERNEL_AIO}=allow keeps it for a program that uses it on local \
             files only)"
        )
    });
    false
}

/// Whether [`ENV_KERNEL_AIO`] says `allow` (read once, at start).
pub fn kernel_aio_switch() -> bool {
    std::env::var(ENV_KERNEL_AIO).is_ok_and(|v| v.trim() == "allow")
}

/// After liburing set up a ring: noticed like a ring mapped through libc.
pub fn liburing_ring_made() {
    if crate::state::get().is_none() {
        return;
    }
    RING_MAPPED.store(true, Ordering::Relaxed);
    if fdtable::any() {
        warn_ring_and_nfs();
    }
}

fn warn_ring_and_nfs() {
    warn::once("io_uring mapped", || {
        "this process uses io_uring and NFS descriptors: I/O submitted through io_uring on \
         NFS descriptors is not served (it reaches local placeholder files: reads see an \
         empty file, writes are lost and reported at close); use a synchronous engine \
         (read/write/pread/pwrite)"
            .into()
    });
}

/// True if `fd` is an io_uring instance.
fn is_ring(fd: c_int) -> bool {
    crate::paths::descriptor_target(fd).is_some_and(|t| t == b"anon_inode:[io_uring]")
}

/// After `close` of a ring descriptor.
pub fn uring_closed(fd: c_int) {
    if !ANY_RING.load(Ordering::Relaxed) {
        return;
    }
    if let Some(m) = RINGS.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
        m.remove(&fd);
    }
}
