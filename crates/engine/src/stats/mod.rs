//! Client statistics as they are recorded: live counters on the I/O path
//! and the latency histogram.
//!
//! The driver feeds each scope's [`IoStats`] (a channel, a file) with
//! `on_submit`, `on_complete`, `on_lost`, `on_retransmit`, ... using relaxed
//! atomics only — no lock, no allocation, no clock: latencies arrive as
//! nanoseconds the driver measured. [`IoStats::raw_snapshot`] copies the
//! counters with full histograms, which [`RawIoSnapshot::merge`] adds up
//! exactly (e.g. channels into their path). What is shown to people and
//! programs — the snapshot model of servers, paths, channels and files, and
//! its text, JSON and Prometheus renderers — is the `directnfs` crate's
//! `stats` module.
//!
//! [`Histogram`] is self-contained and is also what the benchmarks use for
//! their latency percentiles.

mod counters;
mod histogram;

pub use counters::{
    proc_name, IoStats, ProcClass, ProcCounters, RawIoSnapshot, NFS3_PROC_COUNT, OTHER_PROC_NAME,
    PROC_NAMES,
};
pub use histogram::{Histogram, HistogramBucket, HistogramSnapshot, BUCKETS as HISTOGRAM_BUCKETS};
