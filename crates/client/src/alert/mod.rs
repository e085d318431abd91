//! The alert log: one clear, timestamped line for each event an operator
//! must know about, in the spirit of Oracle's alert-log lines for Direct
//! NFS.
//!
//! | event | level | line (after the timestamp and `directnfs[PID]:`) |
//! |---|---|---|
//! | a channel failed | WARNING | `SERVER: channel 3 on path L->R failed (WHY); 12 call(s) moved` |
//! | a path went down (its last channel failed) | WARNING | `SERVER: path L->R DOWN (WHY)` |
//! | a path came back (its first channel reconnected) | NOTICE | `SERVER: path L->R UP after 2.1 s` |
//! | a channel reconnected (its path was up) | NOTICE | `SERVER: channel 3 on path L->R reconnected` |
//! | the server restarted (write verifier changed) | WARNING | `SERVER: server restart detected (write verifier 65f1..00 -> 65f2..00)` |
//! | NFS3ERR_JUKEBOX storm | WARNING | `SERVER: JUKEBOX storm: 40 "try again later" replies in 1.0 s` |
//! | a MOUNT attempt failed and will be retried | NOTICE | `SERVER: MOUNT EXPORT failed (WHY); retry 3 in 4.0 s` |
//! | NFSv3: NLM locks reclaimed after a lock manager restart | NOTICE | `SERVER: 2 NLM lock(s) reclaimed after a server restart` |
//! | NFSv3: an NLM lock lost (its reclaim refused, or too late) | WARNING | `SERVER: NLM lock LOST: file handle 01..ff, owner OH (svid 42), bytes 0..10, exclusive: WHY` |
//!
//! Lines go to stderr by default (with the interception library they land
//! in the database's own log), to a file, to syslog, or nowhere: see
//! [`Sink`] and [`set_sink`]; the environment variable
//! `DIRECTNFS_ALERT_LOG` and the mount option `alert_log` take the same
//! values. A flapping path cannot flood the log: lines about one subject
//! (a path, a server) pass at most [`BURST`] at once, then one per
//! [`REFILL`]; the next line that passes says how many were held back.
//! The latest lines are also kept in memory ([`recent`]) and shown by
//! `dnfs stats`. A `fork` waits for a line being written (`fork_guard`),
//! so the child never inherits the log locked.

mod fork_guard;
mod limit;
mod line;
mod sink;
mod watch;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use line::civil_from_days;
pub use sink::Sink;
pub(crate) use watch::ServerWatch;

use limit::{Admit, RateLimiter};
use line::{format_line, Level};

/// Lines about one subject that may pass at once.
pub const BURST: u32 = 12;
/// Once a subject's burst is spent, one more line may pass per this long.
pub const REFILL: Duration = Duration::from_secs(5);
/// Lines kept for [`recent`].
const RECENT: usize = 32;

struct Log {
    sink: Option<Sink>,
    limiter: RateLimiter,
    recent: VecDeque<String>,
    origin: Instant,
}

static LOG: Mutex<Option<Log>> = Mutex::new(None);

/// Sends this process's alert lines to `sink` from now on.
pub fn set_sink(sink: Sink) {
    with_log(|log| log.sink = Some(sink));
}

/// The process's latest alert lines (at most 32), oldest first.
pub fn recent() -> Vec<String> {
    with_log(|log| log.recent.iter().cloned().collect())
}

fn with_log<T>(f: impl FnOnce(&mut Log) -> T) -> T {
    fork_guard::install();
    let mut guard = LOG.lock().unwrap_or_else(|p| p.into_inner());
    let log = guard.get_or_insert_with(|| Log {
        sink: None,
        limiter: RateLimiter::new(BURST, REFILL),
        recent: VecDeque::with_capacity(RECENT),
        origin: Instant::now(),
    });
    f(log)
}

/// Writes one line about `subject` (the rate-limiting key), if the limiter
/// lets it through.
fn emit(level: Level, subject: &str, message: &str) {
    with_log(|log| {
        let now = log.origin.elapsed();
        let held_back = match log.limiter.admit(subject, now) {
            Admit::No => return,
            Admit::Yes { held_back } => held_back,
        };
        let mut message = message.to_owned();
        if held_back > 0 {
            message.push_str(&format!(
                " ({held_back} earlier line(s) about {subject} held back)"
            ));
        }
        let line = format_line(std::time::SystemTime::now(), level, &message);
        if log.recent.len() == RECENT {
            log.recent.pop_front();
        }
        log.recent.push_back(line.clone());
        let sink = log.sink.get_or_insert_with(Sink::from_env);
        sink.write(level, &line);
    });
}

/// The alert context of one client: the server name every line starts
/// with, and since when each of its paths is down. Cheap to clone; the
/// driver keeps one.
#[derive(Debug, Clone, Default)]
pub struct Alerts {
    server: String,
    down_since: Arc<Mutex<HashMap<String, Instant>>>,
}

impl Alerts {
    /// Alerts about `server` (the dnfstab `server:` name or URL host).
    pub fn new(server: &str) -> Self {
        Alerts {
            server: server.to_owned(),
            down_since: Arc::default(),
        }
    }

    /// A channel failed (`moved` calls were in flight on it); `path_down`
    /// when it was the last channel up on its path.
    pub(crate) fn channel_failed(
        &self,
        channel: usize,
        path: &str,
        why: &str,
        moved: usize,
        path_down: bool,
    ) {
        self.failover(channel, path, why, moved);
        if path_down {
            self.down_since
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry(path.to_owned())
                .or_insert_with(Instant::now);
            self.path_down(path, why);
        }
    }

    /// A channel connected: its path comes back UP if it was reported
    /// down; otherwise a reconnect (`reconnect`: not its first connection)
    /// is noted.
    pub(crate) fn channel_connected(&self, channel: usize, path: &str, reconnect: bool) {
        let was_down = self
            .down_since
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(path);
        match was_down {
            Some(since) => self.path_up(path, Some(since.elapsed())),
            None if reconnect => self.reconnected(channel, path),
            None => {}
        }
    }

    fn path_subject(&self, path: &str) -> String {
        format!("path {path} of {}", self.server)
    }

    /// A channel's connection failed; `moved` calls in flight on it were
    /// sent again elsewhere.
    fn failover(&self, channel: usize, path: &str, why: &str, moved: usize) {
        emit(
            Level::Warning,
            &self.path_subject(path),
            &format!(
                "{}: channel {channel} on path {path} failed ({why}); {moved} call(s) moved",
                self.server
            ),
        );
    }

    /// The last channel of a path failed: the path is down.
    fn path_down(&self, path: &str, why: &str) {
        emit(
            Level::Warning,
            &self.path_subject(path),
            &format!("{}: path {path} DOWN ({why})", self.server),
        );
    }

    /// The first channel of a down path reconnected.
    fn path_up(&self, path: &str, down_for: Option<Duration>) {
        let after =
            down_for.map_or_else(String::new, |d| format!(" after {:.1} s", d.as_secs_f64()));
        emit(
            Level::Notice,
            &self.path_subject(path),
            &format!("{}: path {path} UP{after}", self.server),
        );
    }

    /// A channel reconnected on a path that was up.
    fn reconnected(&self, channel: usize, path: &str) {
        emit(
            Level::Notice,
            &self.path_subject(path),
            &format!(
                "{}: channel {channel} on path {path} reconnected",
                self.server
            ),
        );
    }

    /// The server's write verifier changed: it restarted.
    pub(crate) fn server_restarted(&self, old: [u8; 8], new: [u8; 8]) {
        emit(
            Level::Warning,
            &format!("server {}", self.server),
            &format!(
                "{}: server restart detected (write verifier {} -> {})",
                self.server,
                hex(&old),
                hex(&new)
            ),
        );
    }

    /// Many NFS3ERR_JUKEBOX replies in a short time.
    pub(crate) fn jukebox_storm(&self, replies: u64, window: Duration) {
        emit(
            Level::Warning,
            &format!("server {}", self.server),
            &format!(
                "{}: JUKEBOX storm: {replies} \"try again later\" replies in {:.1} s",
                self.server,
                window.as_secs_f64()
            ),
        );
    }

    /// A MOUNT of `export` failed with `error`; attempt `attempt` follows
    /// after `delay` (mount retry until `mnt_timeout`).
    pub fn mount_retry(&self, export: &str, attempt: u32, delay: Duration, error: &str) {
        emit(
            Level::Notice,
            &format!("mount {export} of {}", self.server),
            &format!(
                "{}: MOUNT {export} failed ({error}); retry {attempt} in {:.1} s",
                self.server,
                delay.as_secs_f64()
            ),
        );
    }

    /// NFSv3: `n` NLM locks were reclaimed after the server's lock
    /// manager restarted.
    pub(crate) fn nlm_locks_reclaimed(&self, n: usize) {
        emit(
            Level::Notice,
            &format!("server {}", self.server),
            &format!(
                "{}: {n} NLM lock(s) reclaimed after a server restart",
                self.server
            ),
        );
    }

    /// NFSv3: the NLM lock of `owner` on `range` of the file with handle
    /// `file` (hex) is no longer held, for `why`.
    pub(crate) fn nlm_lock_lost(&self, file: &str, owner: &str, range: &str, why: &str) {
        emit(
            Level::Warning,
            &format!("NLM locks of {}", self.server),
            &format!(
                "{}: NLM lock LOST: file handle {file}, owner {owner}, {range}: {why}",
                self.server
            ),
        );
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
