//! Threads the client starts must never take a signal meant for the
//! program that hosts it (PostgreSQL, for one, relies on its own threads
//! receiving them, and blocks SIGURG to read it through a signalfd): they
//! are started with every signal blocked, which they inherit. Every thread
//! of the library is started by [`spawn`], whichever thread of the program
//! starts it.

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

/// Starts a thread of the library with every signal blocked
/// ([`with_signals_blocked`]), whichever thread calls it.
pub fn spawn<F, T>(
    builder: std::thread::Builder,
    f: F,
) -> std::io::Result<std::thread::JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    with_signals_blocked(|| builder.spawn(f))
}
