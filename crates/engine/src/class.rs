//! I/O classes: which requests must never wait behind which.
//!
//! A request carries a class ([`IoClass`]): `log` (redo, WAL and journal
//! writes and their commits: a transaction's commit waits for them one at a
//! time), `data` (random reads and writes, the default) or `bulk` (scans,
//! copies, backups: many large requests in flight). With classes on
//! ([`crate::Engine::set_classes`]) the engine applies two rules:
//!
//! * **the lane**: one channel of each path that has two or more is that
//!   path's log lane ([`crate::Engine::set_lane`]). Log requests go on a
//!   lane; bulk requests never do; data requests go anywhere. A log write's
//!   reply is then never queued behind megabytes of scan replies in the
//!   same socket, nor its request behind scan requests in the server's
//!   per-connection queue. Bulk keeps every other channel, so it always
//!   progresses, and a flood of log requests (a misclassified file) is held
//!   to one connection per path. When no lane is up a log request takes
//!   any channel, and when only a lane is up bulk takes it: a class never
//!   parks a request that a channel could carry ([`admits`]).
//! * **headroom**: a log request is admitted with up to [`LOG_HEADROOM`]
//!   requests beyond `max_client_inflight` (a scan that fills the client's
//!   window does not make a commit wait for one of its reads to finish),
//!   and a parked log request goes to the front of the parked queue.
//!
//! With classes off every request is treated as `data`: the engine behaves
//! as it did before classes existed.

use std::fmt;
use std::str::FromStr;

/// What a request is for; see the module doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum IoClass {
    /// Redo, WAL and journal writes and their commits: latency first.
    Log,
    /// Random reads and writes (the default).
    #[default]
    Data,
    /// Scans, copies, backups: throughput first.
    Bulk,
}

/// Log requests admitted beyond `max_client_inflight` (see the module doc).
pub const LOG_HEADROOM: usize = 16;

impl IoClass {
    /// Every class, in priority order.
    pub const ALL: [IoClass; 3] = [IoClass::Log, IoClass::Data, IoClass::Bulk];

    /// Its name: `log`, `data` or `bulk`.
    pub fn name(self) -> &'static str {
        match self {
            IoClass::Log => "log",
            IoClass::Data => "data",
            IoClass::Bulk => "bulk",
        }
    }

    /// Its index in [`IoClass::ALL`] (for per-class tables).
    pub fn index(self) -> usize {
        match self {
            IoClass::Log => 0,
            IoClass::Data => 1,
            IoClass::Bulk => 2,
        }
    }

    /// The class of index `i` ([`index`](Self::index)); `data` for anything
    /// else.
    pub fn from_index(i: usize) -> IoClass {
        match i {
            0 => IoClass::Log,
            2 => IoClass::Bulk,
            _ => IoClass::Data,
        }
    }
}

impl fmt::Display for IoClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An I/O class name that is not `log`, `data` or `bulk`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownClass(pub String);

impl fmt::Display for UnknownClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown I/O class {:?} (log, data or bulk)", self.0)
    }
}

impl std::error::Error for UnknownClass {}

impl FromStr for IoClass {
    type Err = UnknownClass;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "log" => Ok(IoClass::Log),
            "data" => Ok(IoClass::Data),
            "bulk" => Ok(IoClass::Bulk),
            _ => Err(UnknownClass(s.to_string())),
        }
    }
}

/// Whether a request of `class` may go on a channel that is (`lane`) or is
/// not a log lane, in the first choice. Log: lanes only; bulk: never a
/// lane; data: any. When no channel the first choice allows is up, the
/// engine chooses among all (a class orders, it never strands a request).
pub fn admits(class: IoClass, lane: bool) -> bool {
    match class {
        IoClass::Log => lane,
        IoClass::Data => true,
        IoClass::Bulk => !lane,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_goes_only_on_lanes_and_bulk_never() {
        assert!(admits(IoClass::Log, true));
        assert!(!admits(IoClass::Log, false));
        assert!(!admits(IoClass::Bulk, true));
        assert!(admits(IoClass::Bulk, false));
        assert!(admits(IoClass::Data, true) && admits(IoClass::Data, false));
    }

    #[test]
    fn class_names_parse_back_and_unknown_ones_are_refused() {
        for c in IoClass::ALL {
            assert_eq!(c.name().parse::<IoClass>(), Ok(c));
            assert_eq!(IoClass::from_index(c.index()), c);
        }
        assert_eq!(" LOG ".parse::<IoClass>(), Ok(IoClass::Log));
        let e = "redo".parse::<IoClass>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown I/O class \"redo\" (log, data or bulk)"
        );
    }
}
