//! What the hostile tests measure the client with.
//!
//! * [`within`]: runs a client operation on its own thread and fails the
//!   test if it has not returned by a hard deadline (a hang), or if it
//!   panicked. A hung operation's thread is left behind; the test fails.
//! * [`internal_panics`]: panics on the client's own threads (`dnfs-*`:
//!   receivers, maintenance, reconnects), which a caller would never see
//!   directly — it would just hang.
//! * [`largest_allocation`]: the largest single allocation request this
//!   process has made, from a counting global allocator: a client that
//!   sizes a buffer from a hostile length shows up here even when the
//!   kernel would lazily back the pages. A test binary that measures it
//!   installs the allocator itself
//!   (`#[global_allocator] static A: Counting = Counting;`): a library
//!   cannot choose the allocator of every binary that links it.
//! * [`allocations_on_this_thread`]: how many allocations the calling
//!   thread made, from the same allocator (a steady stream of I/O should
//!   make none).
//! * [`peak_rss_kib`]: `VmHWM` from `/proc/self/status`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

/// The system allocator, recording the largest request (see the module
/// doc for how a test binary installs it).
#[derive(Debug)]
pub struct Counting;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // Allocations made by this thread (const-initialised, no destructor:
    // safe to touch from inside the allocator).
    static ALLOCATIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn count_allocation() {
    // `try_with`: a thread being torn down has no counter any more.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged; the only addition is an atomic counter update.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        count_allocation();
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        count_allocation();
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, i.e. from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        count_allocation();
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocations and reallocations made so far by the calling thread; zero
/// unless the test binary installed [`Counting`] as its global allocator.
pub fn allocations_on_this_thread() -> u64 {
    ALLOCATIONS.with(std::cell::Cell::get)
}

/// The largest single allocation (or reallocation) requested so far; zero
/// unless the test binary installed [`Counting`] as its global allocator.
pub fn largest_allocation() -> usize {
    LARGEST.load(Ordering::Relaxed)
}

/// Peak resident set size of this process, in KiB (`VmHWM`).
pub fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Serialises the tests that measure memory, so two floods do not add up.
pub fn memory_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

static INTERNAL_PANICS: AtomicUsize = AtomicUsize::new(0);

/// Installs (once) a panic hook counting panics on `dnfs-*` threads.
pub fn install_panic_watch() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let internal = std::thread::current()
                .name()
                .is_some_and(|n| n.starts_with("dnfs-"));
            if internal {
                INTERNAL_PANICS.fetch_add(1, Ordering::SeqCst);
            }
            previous(info);
        }));
    });
}

/// Panics seen on the client's own threads since the process started.
pub fn internal_panics() -> usize {
    INTERNAL_PANICS.load(Ordering::SeqCst)
}

/// Fails the test if a client thread (`dnfs-*`) has panicked.
pub fn assert_no_internal_panic() {
    assert_eq!(internal_panics(), 0, "a client thread (dnfs-*) panicked");
}

/// Runs `f` on a new thread and returns its result with the time it took.
/// Fails the test if `f` panics or has not returned after `limit`.
pub fn within<T, F>(what: &str, limit: Duration, f: F) -> (T, Duration)
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    within_or(what, limit, f, String::new)
}

/// [`within`], adding `report()` (e.g. what the server saw) to the failure
/// message of a hang.
pub fn within_or<T, F, R>(what: &str, limit: Duration, f: F, report: R) -> (T, Duration)
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
    R: Fn() -> String,
{
    install_panic_watch();
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    std::thread::Builder::new()
        .name(format!("op: {what}"))
        .spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
            let _ = tx.send(r);
        })
        .expect("spawn");
    match rx.recv_timeout(limit) {
        Ok(Ok(v)) => (v, start.elapsed()),
        Ok(Err(p)) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{what}: the client panicked: {msg}");
        }
        Err(_) => panic!("{what}: no return within {limit:?} (hang) {}", report()),
    }
}
