//! Where the client's own descriptors live.
//!
//! A program that hosts the client does not know about its sockets and
//! wake-up descriptor; it may `dup2` onto any small number it likes (a shell
//! running `exec 3< file` takes descriptor 3 whatever it was). With a
//! floor set, every descriptor the client keeps (connections, their
//! reader and writer copies, the wake-up eventfd) is moved to the lowest
//! free number at or above it, out of the way of numbers programs pick
//! themselves. The default (0) changes nothing. The interception library
//! sets one; other callers rarely need to.
//!
//! The kernel gives every new descriptor the lowest free number, so one of
//! the client's sits below the floor for an instant before it moves. A
//! client thread the host program does not know about (the statistics
//! endpoint, a reconnect, an idle channel connecting) may make one while
//! a single-threaded host runs `dup2(f, 3)` — which would silently close
//! the client's new socket, after which the client would move the host's
//! file and close the host's descriptor 3. So, with a floor, the client
//! makes descriptors inside [`making`], and the interception library runs
//! the host's `dup2`/`dup3` inside [`host_places`]: a host call waits for
//! the windows open to close (microseconds), and no new window opens while
//! a host call is in progress.

use std::os::fd::{FromRawFd, IntoRawFd, RawFd};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

static FLOOR: AtomicI32 = AtomicI32::new(0);
/// Client windows making descriptors, in progress.
static MAKING: AtomicU32 = AtomicU32::new(0);
/// Host calls placing a descriptor at a number of their choice, in progress.
static PLACING: AtomicU32 = AtomicU32::new(0);

/// Runs `make`, which makes descriptors of the client's and moves them
/// above the floor (or closes them) before it returns. Without a floor it
/// only runs `make`. Keep it short and never blocking for long: a host
/// `dup2` waits for it.
pub(crate) fn making<T>(make: impl FnOnce() -> T) -> T {
    // A window inside this thread's own window is that window (waiting
    // for a host call there would wait for ourselves). After the thread's
    // locals are gone (an exit handler), the window is counted anyway.
    let nested = IN_WINDOW.try_with(|w| w.replace(true)).unwrap_or(false);
    if nested {
        return make();
    }
    let _window = Window::open();
    make()
}

/// An open [`making`] window; closed on drop, a panic included (a window
/// left open would make every later host `dup2` wait for ever).
struct Window {
    counted: bool,
}

impl Window {
    fn open() -> Self {
        if FLOOR.load(Ordering::Relaxed) == 0 {
            return Self { counted: false };
        }
        loop {
            // SeqCst on both sides (here and in host_places): each side
            // announces itself, then looks at the other; of two racing
            // sides at least one sees the other.
            MAKING.fetch_add(1, Ordering::SeqCst);
            if PLACING.load(Ordering::SeqCst) == 0 {
                return Self { counted: true };
            }
            // A host call goes first: step back until it is done.
            MAKING.fetch_sub(1, Ordering::SeqCst);
            while PLACING.load(Ordering::SeqCst) != 0 {
                std::thread::yield_now();
            }
        }
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        if self.counted {
            MAKING.fetch_sub(1, Ordering::SeqCst);
        }
        let _ = IN_WINDOW.try_with(|w| w.set(false));
    }
}

thread_local! {
    /// This thread is inside [`making`].
    static IN_WINDOW: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `place`, a call of the host program that puts a descriptor at a
/// number it chose (`dup2`, `dup3`), once no client descriptor can be
/// sitting at a low number: it waits for the client's windows in progress
/// (the host never steps back, so it cannot be starved). Without a floor
/// it only runs `place`.
pub fn host_places<T>(place: impl FnOnce() -> T) -> T {
    if FLOOR.load(Ordering::Relaxed) == 0 {
        return place();
    }
    PLACING.fetch_add(1, Ordering::SeqCst);
    while MAKING.load(Ordering::SeqCst) != 0 {
        std::thread::yield_now();
    }
    let out = place();
    PLACING.fetch_sub(1, Ordering::SeqCst);
    out
}

/// In the child of `fork`: no window is open there (the threads that had
/// them are the parent's), whatever the counts say.
pub fn reset_in_child() {
    MAKING.store(0, Ordering::SeqCst);
    PLACING.store(0, Ordering::SeqCst);
}

/// Sets the lowest descriptor number the client uses for descriptors it
/// creates from now on (0: wherever the kernel puts them). A floor the
/// process's descriptor limit does not allow is ignored for that
/// descriptor (it stays where it is).
pub fn set_descriptor_floor(floor: i32) {
    FLOOR.store(floor.max(0), Ordering::Relaxed);
}

/// Moves `fd` to the floor or above (close-on-exec), closing the original;
/// returns it unchanged when there is no floor, it is already above, or
/// the move fails.
pub(crate) fn raise(fd: RawFd) -> RawFd {
    let floor = FLOOR.load(Ordering::Relaxed);
    if floor == 0 || fd >= floor || fd < 0 {
        return fd;
    }
    // SAFETY: F_DUPFD_CLOEXEC of a descriptor this crate owns; on success
    // the original is closed and only the copy is used.
    unsafe {
        let high = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, floor);
        if high < 0 {
            return fd;
        }
        libc::close(fd);
        high
    }
}

/// Makes a descriptor with `make` and moves it to the floor, in a
/// [`making`] window.
pub(crate) fn made<T: IntoRawFd + FromRawFd, E>(
    make: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    making(|| make().map(raise_owned))
}

/// [`raise`] for an owned descriptor type.
pub(crate) fn raise_owned<T: IntoRawFd + FromRawFd>(owned: T) -> T {
    let fd = raise(owned.into_raw_fd());
    // SAFETY: `fd` is the descriptor just released from `owned` (or its
    // copy, the original closed): owned by nobody else.
    unsafe { T::from_raw_fd(fd) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    /// The floor is process-wide: tests that set it take turns.
    static FLOOR_TESTS: Mutex<()> = Mutex::new(());

    #[test]
    fn descriptors_move_to_the_floor_and_back_to_normal_without_one() {
        let _turn = FLOOR_TESTS.lock().unwrap_or_else(|p| p.into_inner());
        let f = std::fs::File::open("/dev/null").unwrap();
        set_descriptor_floor(300);
        let f = raise_owned(f);
        assert!(std::os::fd::AsRawFd::as_raw_fd(&f) >= 300);
        let g = made(|| std::fs::File::open("/dev/null")).unwrap();
        assert!(std::os::fd::AsRawFd::as_raw_fd(&g) >= 300);
        set_descriptor_floor(0);
        let g = raise_owned(std::fs::File::open("/dev/null").unwrap());
        assert!(std::os::fd::AsRawFd::as_raw_fd(&g) < 300);
    }

    #[test]
    fn a_host_dup2_waits_for_a_window_making_a_descriptor_and_windows_wait_for_it() {
        let _turn = FLOOR_TESTS.lock().unwrap_or_else(|p| p.into_inner());
        set_descriptor_floor(300);
        // A client thread holds a window open for a while.
        let (opened, is_open) = mpsc::channel();
        let maker = std::thread::spawn(move || {
            making(|| {
                opened.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(150));
                Instant::now()
            })
        });
        is_open.recv().unwrap();
        let placed = host_places(Instant::now);
        let closed = maker.join().unwrap();
        assert!(placed >= closed, "the host call ran inside the window");
        // A window that starts while a host call is in progress waits
        // for it.
        let (placing, is_placing) = mpsc::channel();
        let host = std::thread::spawn(move || {
            host_places(|| {
                placing.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(150));
                Instant::now()
            })
        });
        is_placing.recv().unwrap();
        let made_at = making(Instant::now);
        let placed = host.join().unwrap();
        assert!(made_at >= placed, "the window opened during the host call");
        // A window inside a window does not wait for itself.
        assert_eq!(making(|| making(|| 7)), 7);
        set_descriptor_floor(0);
    }
}
