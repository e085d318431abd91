//! Threads the client starts must never take a signal meant for the
//! program that hosts it (PostgreSQL, for one, relies on its own threads
//! receiving them, and blocks SIGURG to read it through a signalfd): they
//! are started with every signal blocked, which they inherit. Every thread
//! of the library is started by [`spawn`], whichever thread of the program
//! starts it, which also makes it without `std::thread` (fork safety:
//! see [`spawn`]).

use std::sync::{Arc, Mutex};

/// Runs `f` with every signal blocked in this thread (the threads it
/// starts inherit the mask), then restores the thread's mask.
pub fn with_signals_blocked<T>(f: impl FnOnce() -> T) -> T {
    // Miri (scripts/test.sh runs the client's unit tests under it) has no
    // signal masks; it delivers no signals either.
    if cfg!(miri) {
        return f();
    }
    // SAFETY: sigset_t values initialised by sigfillset/sigemptyset before
    // use; pthread_sigmask only changes this thread's mask.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::sigemptyset(&mut old);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let v = f();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        v
    }
}

/// Stack of a library thread unless its caller asks otherwise (what
/// `std::thread` gives by default).
const DEFAULT_STACK: usize = 2 << 20;

/// Starts a thread of the library named `name` (at most 15 bytes are
/// kept), with every signal blocked ([`with_signals_blocked`]), whichever
/// thread calls it.
///
/// The thread is made with `pthread_create` directly, not `std::thread`:
/// a thread that `std::thread` starts takes a lock of the standard
/// library's own (the stack-overflow guard's registry, in a Rust program)
/// as it begins and as it ends. A child of `fork` inherits that lock held
/// whenever another thread of its parent was starting or ending at the
/// moment of the fork, and every thread the child then started would wait
/// for it for ever: its client's timeouts and reconnects with them (a
/// test's child hung so). `pthread_create` takes no such lock.
pub fn spawn<F, T>(name: &str, f: F) -> std::io::Result<Joiner<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    spawn_with_stack(name, DEFAULT_STACK, f)
}

/// [`spawn`] with a stack of `stack` bytes.
pub fn spawn_with_stack<F, T>(name: &str, stack: usize, f: F) -> std::io::Result<Joiner<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let result: Arc<Mutex<Option<std::thread::Result<T>>>> = Arc::new(Mutex::new(None));
    let slot = Arc::clone(&result);
    // The kernel keeps 15 bytes of a thread's name and a NUL.
    let mut short: Vec<u8> = name.bytes().filter(|&b| b != 0).take(15).collect();
    short.push(0);
    let full_name = name.to_string();
    let name_for_creator = short.clone();
    let body: Box<dyn FnOnce() + Send> = Box::new(move || {
        // SAFETY: pthread_self is this thread, alive.
        let _ = name_thread(unsafe { libc::pthread_self() }, &short);
        // A panic must not unwind out of the thread's C entry point: it is
        // caught and handed to `join`, as `std::thread` does.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        if r.is_err() {
            // The standard library's message (printed as the panic began)
            // calls a thread it did not start '<unnamed>': say which.
            eprintln!("directnfs: that panic was in the library's thread '{full_name}'");
        }
        *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
    });
    let arg = Box::into_raw(Box::new(body));
    let made = with_signals_blocked(|| {
        // SAFETY: `attr` is initialised before use and destroyed after;
        // `start` takes back the box `arg` points to, exactly once, in the
        // new thread (or here, when no thread was made).
        unsafe {
            let mut attr: libc::pthread_attr_t = std::mem::zeroed();
            if libc::pthread_attr_init(&mut attr) != 0 {
                return Err(std::io::Error::other("pthread_attr_init failed"));
            }
            let page = usize::try_from(libc::sysconf(libc::_SC_PAGESIZE)).unwrap_or(4096);
            let size = stack.max(libc::PTHREAD_STACK_MIN).div_ceil(page) * page;
            libc::pthread_attr_setstacksize(&mut attr, size);
            let mut thread: libc::pthread_t = 0;
            let rc = libc::pthread_create(&mut thread, &attr, start, arg.cast());
            libc::pthread_attr_destroy(&mut attr);
            if rc == 0 {
                // Named here too, before `spawn` returns: the thread
                // names itself only once it runs, which on a busy machine
                // can be well after its creator has gone on (a test that
                // looked for the thread right after the client was made
                // found no thread of that name). Ignored if it fails (the
                // thread has ended already: it named itself first).
                let _ = name_thread(thread, &name_for_creator);
                Ok(thread)
            } else {
                drop(Box::from_raw(arg));
                Err(std::io::Error::from_raw_os_error(rc))
            }
        }
    })?;
    Ok(Joiner {
        thread: Some(made),
        result,
    })
}

/// Gives `thread` (made by [`spawn_with_stack`], not yet joined or
/// detached) the name `short` (NUL-terminated, at most 16 bytes with it).
fn name_thread(thread: libc::pthread_t, short: &[u8]) -> i32 {
    debug_assert!(short.len() <= 16 && short.last() == Some(&0));
    // SAFETY: `short` is NUL-terminated and at most 16 bytes long, as
    // pthread_setname_np requires; `thread` is a live pthread_t of ours.
    unsafe { libc::pthread_setname_np(thread, short.as_ptr().cast()) }
}

/// The entry point of every library thread: runs the body [`spawn`] boxed.
extern "C" fn start(arg: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: `arg` is the box `spawn` leaked for this thread alone.
    let body = unsafe { Box::from_raw(arg.cast::<Box<dyn FnOnce() + Send>>()) };
    body();
    std::ptr::null_mut()
}

/// A thread started by [`spawn`]: [`join`](Self::join) waits for it; one
/// dropped without joining runs on, detached (as a dropped
/// `std::thread::JoinHandle`).
#[derive(Debug)]
pub struct Joiner<T> {
    thread: Option<libc::pthread_t>,
    result: Arc<Mutex<Option<std::thread::Result<T>>>>,
}

impl<T> Joiner<T> {
    /// Waits for the thread to end: what it returned, or its panic.
    pub fn join(mut self) -> std::thread::Result<T> {
        if let Some(t) = self.thread.take() {
            // SAFETY: a thread of ours, neither joined nor detached yet.
            unsafe { libc::pthread_join(t, std::ptr::null_mut()) };
        }
        let r = self.result.lock().unwrap_or_else(|p| p.into_inner()).take();
        r.unwrap_or_else(|| Err(Box::new("the thread ended without a result")))
    }
}

impl<T> Drop for Joiner<T> {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            // SAFETY: a thread of ours, neither joined nor detached yet.
            unsafe { libc::pthread_detach(t) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore)] // reads /proc
    fn a_library_threads_panic_and_result_reach_join() {
        assert_eq!(spawn("value", || 42).unwrap().join().unwrap(), 42);
        let r = spawn("panics", || -> u8 { panic!("on purpose") })
            .unwrap()
            .join();
        assert!(r.is_err());
        // A long name is cut to what the kernel keeps, not refused.
        let name = spawn("a-name-longer-than-fifteen-bytes", || {
            std::fs::read_to_string("/proc/thread-self/comm").unwrap_or_default()
        });
        assert_eq!(name.unwrap().join().unwrap().trim_end(), "a-name-longer-t");
    }

    #[test]
    #[cfg_attr(miri, ignore)] // reads /proc
    fn a_thread_has_its_name_as_soon_as_spawn_returns() {
        // A test found no "dnfs-v41-renew" right after the client was made:
        // the thread had not yet run far enough to name itself. A thread
        // names itself as its first act, so the window is short: many
        // rounds, each looking right after `spawn` returns (before the
        // thread is let go on, so it is still alive to be seen).
        for i in 0..200 {
            let name = format!("dnfs-race{i}");
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let t = spawn(&name, move || rx.recv().is_ok()).unwrap();
            // The name the kernel holds for this very thread (glibc reads
            // its /proc/self/task/TID/comm): not a scan of the task
            // directory, which can miss a live thread while threads of
            // other tests start and end beside it.
            let mut buf = [0u8; 16];
            let thread = t.thread.expect("a thread not yet joined");
            // SAFETY: a live thread of ours (not joined: it waits on `rx`);
            // `buf` is 16 bytes, as the call requires at least.
            let rc = unsafe { libc::pthread_getname_np(thread, buf.as_mut_ptr().cast(), 16) };
            tx.send(()).unwrap();
            assert!(t.join().unwrap());
            assert_eq!(rc, 0, "round {i}: pthread_getname_np failed");
            let got = std::ffi::CStr::from_bytes_until_nul(&buf)
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default();
            assert_eq!(got, name, "round {i}: the name right after spawn returned");
        }
    }
}
