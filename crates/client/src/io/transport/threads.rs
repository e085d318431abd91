//! The transport's two threads — maintenance and the fallback receiver —
//! and when they start.
//!
//! A transport made by `Client::mount` starts them with itself. A forked
//! child's (`Start::WhenNeeded`, see `fork.rs`) starts without them: a
//! process that makes a few calls, each waited for by its caller, and
//! exits (a PostgreSQL backend per connection) needs neither — a waiting
//! caller receives its own reply (`leader.rs`) — and starting two threads,
//! and turning the process multi-threaded (every copy-on-write fault after
//! `fork` then flushes the TLBs of every CPU it ran on), is most of the
//! CPU a new process spends on its client. They start the first moment
//! one of their duties comes up:
//!
//! * the engine asks for its time: a failed channel to reconnect, a
//!   JUKEBOX re-send, a parked call (`Shared::wake_maintenance`);
//! * a caller has waited one maintenance tick for its calls (only the
//!   maintenance thread times calls out; a tick is at most a twentieth of
//!   `timeo`, so it runs before any call's first deadline), or stops
//!   waiting with calls still in flight that nobody else receives
//!   (`leader.rs`);
//! * calls are submitted that nobody is about to wait for (the batch API,
//!   write-behind: `Transport::submit_many`);
//! * the transport has lived [`LAZY_FOR`]: at its next submission, so a
//!   long-lived process runs as every other does.
//!
//! Timeouts, retries, failover and reconnection therefore behave as with
//! the threads started at once. The channels a lazy transport left idle
//! (all but the first of each path, `Transport::start_with`) connect at
//! the maintenance thread's first tick.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::Start;
use crate::signals::{spawn, Joiner};

// This module names no other module of the transport: what the two threads
// run comes in through [`Duties`], which `transport/mod.rs` implements for
// `Shared` with the loops of `maintenance.rs` and `leader.rs`.

/// What the threads of a transport run, and whether it is stopping.
pub(crate) trait Duties: Send + Sync + 'static {
    /// Whether the transport is shutting down (no thread starts then).
    fn is_shutdown(&self) -> bool;
    /// The maintenance thread's loop, until the transport shuts down.
    fn maintain(sh: &Arc<Self>);
    /// The fallback receiver's loop, until the transport shuts down.
    fn receive(sh: &Arc<Self>);
}

/// The maintenance thread's tick, also the orphan check's period: short
/// next to `timeo`, so replies nobody waits for are received long before
/// their calls would time out.
pub(crate) fn tick(timeo: Duration) -> Duration {
    (timeo / 20).clamp(Duration::from_millis(5), Duration::from_millis(100))
}

/// How long a lazy transport may run without its threads.
pub(crate) const LAZY_FOR: Duration = Duration::from_secs(1);

/// The threads of one transport.
#[derive(Debug)]
pub(crate) struct Threads {
    /// Set once they run (read on every submission: one atomic load).
    started: AtomicBool,
    handles: Mutex<Vec<Joiner<()>>>,
    /// Called once they run (a forked child's statistics endpoint).
    then: Option<fn()>,
    /// `Shared::now_ns` after which a submission starts them.
    due_ns: u64,
    /// The maintenance thread's tick: how long a caller waits before it
    /// starts them.
    pub tick: Duration,
}

impl Threads {
    pub(crate) fn new(start: Start, timeo: Duration) -> Self {
        let (then, due_ns) = match start {
            Start::Now => (None, 0),
            Start::WhenNeeded { then } => (Some(then), LAZY_FOR.as_nanos() as u64),
        };
        Self {
            started: AtomicBool::new(false),
            handles: Mutex::new(Vec::new()),
            then,
            due_ns,
            tick: tick(timeo),
        }
    }

    /// Whether they run (or the transport stopped).
    pub(crate) fn started(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }

    /// Whether a transport that has lived `now_ns` should have them.
    pub(crate) fn due(&self, now_ns: u64) -> bool {
        now_ns >= self.due_ns
    }

    /// Starts them unless they run or the transport is stopping.
    pub(crate) fn start<S: Duties>(&self, sh: &Arc<S>) -> io::Result<()> {
        if self.started() {
            return Ok(());
        }
        let mut handles = self.handles.lock().unwrap_or_else(|p| p.into_inner());
        if self.started() || sh.is_shutdown() {
            return Ok(());
        }
        // A lazy start runs in whatever thread of the program made the
        // call that needed the threads (spawn blocks their signals).
        let s2 = Arc::clone(sh);
        handles.push(spawn("dnfs-maint", move || S::maintain(&s2))?);
        let s3 = Arc::clone(sh);
        handles.push(spawn("dnfs-rx", move || S::receive(&s3))?);
        self.started.store(true, Ordering::Release);
        if let Some(then) = self.then {
            then();
        }
        Ok(())
    }

    /// Marks them as running without starting them: a unit test's
    /// detached transport never has them.
    #[cfg(test)]
    pub(crate) fn never(&self) {
        self.started.store(true, Ordering::Release);
    }

    /// Waits for them to end (after `Shared::shut_down`); none start after.
    pub(crate) fn join(&self) {
        let taken = {
            let mut handles = self.handles.lock().unwrap_or_else(|p| p.into_inner());
            self.started.store(true, Ordering::Release);
            std::mem::take(&mut *handles)
        };
        for h in taken {
            let _ = h.join();
        }
    }
}
