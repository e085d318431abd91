//! Client statistics: live counters on the I/O path, a snapshot model, and
//! renderers for people, programs and Prometheus.
//!
//! The model follows Oracle's Direct NFS views so DBAs find what they know:
//!
//! | here | Oracle view | what this adds |
//! |---|---|---|
//! | [`ServerStats`] | `v$dnfs_servers` (server name, dirname, rtmax/wtmax) | totals per server, every address, nested paths |
//! | [`PathStats`] | — (Oracle only shows paths in `v$dnfs_channels`) | per-path bytes and calls, state (`up`/`down`/`probing`), failovers |
//! | [`ChannelStats`] | `v$dnfs_channels` (channel, path, sends, recvs, pending) | queue depth, in-flight peak, latency per channel |
//! | [`FileStats`] | `v$dnfs_files` (filename, filesize, pnum, svr_id) | reads, writes and bytes per file, latency per file |
//! | [`IoSnapshot`] | `v$dnfs_stats` (per-procedure call counts: nfs_read, nfs_write, nfs_getattr, ...) | bytes, errors, retransmits, timeouts, reconnects, in-flight now and peak, latency histograms per [`ProcClass`] |
//!
//! What the Oracle views lack and the reports needed most is latency: here
//! every scope carries p50/p90/p99/p99.9 and the full bucket list per class.
//!
//! Flow: the driver feeds each scope's [`IoStats`] (`on_submit`,
//! `on_complete`, `on_retransmit`, ...) with relaxed atomics only — no lock,
//! no allocation, no clock: latencies arrive as nanoseconds the driver
//! measured. [`IoStats::raw_snapshot`] copies the counters with full
//! histograms, which [`RawIoSnapshot::merge`] adds up exactly (e.g. channels
//! into their path); [`RawIoSnapshot::summarize`] / [`IoStats::snapshot`]
//! produce the serialisable [`IoSnapshot`]. A [`StatsSnapshot`] of servers and
//! files is rendered by [`render_text`], [`render_json`] or
//! [`render_prometheus`].
//!
//! [`Histogram`] is self-contained and is also what the benchmarks use for
//! their latency percentiles.

mod counters;
mod histogram;
mod render;
mod snapshot;

pub use counters::{
    proc_name, IoStats, ProcClass, ProcCounters, RawIoSnapshot, NFS3_PROC_COUNT, OTHER_PROC_NAME,
    PROC_NAMES,
};
pub use histogram::{Histogram, HistogramBucket, HistogramSnapshot, BUCKETS as HISTOGRAM_BUCKETS};
pub use render::{render_json, render_prometheus, render_text, StatsFormat};
pub use snapshot::{
    state, ChannelStats, FileStats, IoSnapshot, LatencySummary, PathStats, ServerStats,
    StatsSnapshot, EVICTED_FILES,
};
