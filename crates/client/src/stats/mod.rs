//! Statistics: the snapshot model of a client, of a process and of the
//! host, and its renderers for people, programs and Prometheus.
//!
//! The model follows Oracle's Direct NFS views so DBAs find what they know:
//!
//! | here | Oracle view | what this adds |
//! |---|---|---|
//! | [`ServerStats`] | `v$dnfs_servers` (server, dirname, NFS version, rtmax/wtmax) | totals per server and export, every address, nested paths, reads and writes per I/O class (`log`, `data`, `bulk`) |
//! | [`PathStats`] | — (Oracle only shows paths in `v$dnfs_channels`) | per-path bytes, calls and latency, state (`up`/`down`), failovers |
//! | [`ChannelStats`] | `v$dnfs_channels` (path, channel, sends, recvs, reconnects) | in flight now and peak, queue depth, effective socket buffers, latency per channel |
//! | [`FileStats`] | `v$dnfs_files` (filename, filesize, pnum, svr_id) | reads, writes and bytes per file, latency per file |
//! | [`IoSnapshot`] | `v$dnfs_stats` (per-procedure call counts) | bytes, errors, retransmits, timeouts, reconnects, in-flight now and peak, latency histograms per class |
//! | [`ProcessStats`], [`HostStats`] | the instance's processes | every directnfs process of the host, read through its local endpoint |
//!
//! What the Oracle views lack and the reports needed most is latency: here
//! every scope carries p50/p90/p99/p99.9 and the full bucket list per class
//! (`read`, `write`, `commit`, `metadata`, `namespace`, `directory`,
//! `null`).
//!
//! Where the numbers come from: [`crate::Client::stats`] takes a
//! [`StatsSnapshot`] of one client from its live counters (recorded
//! lock-free by the I/O driver); every process publishes the snapshot of
//! all its clients, a [`ProcessStats`], on a local endpoint that `dnfs
//! stats`, `dnfs top` and `dnfs exporter` read ([`HostStats`]). Any of them
//! is rendered by [`render_text`], [`render_json`] or
//! [`render_prometheus`] (the host-wide forms: [`render_host_text`],
//! [`render_host_prometheus`]).

pub(crate) mod classes;
pub(crate) mod files;
mod processes;
mod render;
mod snapshot;

pub use directnfs_engine::stats::{Histogram, HistogramSnapshot, ProcClass};
pub use files::MAX_FILE_STATS;
pub use processes::{HostStats, ProcessStats};
pub use render::{
    render_host_prometheus, render_host_text, render_json, render_prometheus, render_text,
    StatsFormat,
};
pub use snapshot::{
    state, ChannelStats, FileStats, IoSnapshot, LatencySummary, PathStats, ServerStats,
    StatsSnapshot, EVICTED_FILES,
};
