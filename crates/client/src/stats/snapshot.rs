//! The serialisable statistics model: plain data, taken from the live
//! counters at one moment, rendered by [`super::render`], published by each
//! process (see `crate::publish`) and written as JSON by `dnfs stats --json`.
//! Fields may be added, never renamed or removed.

use std::collections::BTreeMap;

use directnfs_engine::stats::{HistogramSnapshot, ProcClass, RawIoSnapshot};
use serde::{Deserialize, Serialize};

/// Path and channel state names used in [`PathStats::state`] and
/// [`ChannelStats::state`].
pub mod state {
    /// Healthy, taking I/O.
    pub const UP: &str = "up";
    /// Failed or cut; I/O has moved elsewhere.
    pub const DOWN: &str = "down";
    /// A channel being connected (TCP connect, then a NULL probe unless it
    /// is a forked child's first connection) before it takes I/O.
    pub const CONNECTING: &str = "connecting";
    /// A channel not connected yet: a forked child's extra connections,
    /// opened once its client's threads start.
    pub const IDLE: &str = "idle";
    /// Not written by this version (a channel being connected is
    /// [`CONNECTING`]); kept for readers of older snapshots.
    pub const PROBING: &str = "probing";
    /// Aggregated over processes: down in some of them, up in others.
    pub const PARTLY_DOWN: &str = "partly down";
}

/// Everything the client knows at one moment: v$dnfs_servers with its paths
/// and channels nested inside, and v$dnfs_files.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StatsSnapshot {
    /// One entry per configured or URL-named server.
    pub servers: Vec<ServerStats>,
    /// One entry per file opened (all open ones, and closed ones up to a
    /// bound), sorted by path, then the [`EVICTED_FILES`] total if any.
    pub files: Vec<FileStats>,
}

/// A mounted export of a server (v$dnfs_servers), with its totals over
/// all paths.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerStats {
    /// The `server:` name from the config, or the URL host.
    pub name: String,
    /// The export mounted (v$dnfs_servers `dirname`).
    pub export: String,
    /// NFS protocol version of the mount: `"3"` or `"4.1"`.
    pub nfs_version: String,
    /// Largest READ sent: the server's FSINFO rtmax clamped by `rsize`.
    pub rtmax: u32,
    /// Largest WRITE sent: the server's FSINFO wtmax clamped by `wsize`.
    pub wtmax: u32,
    /// How many clients (mounts of this export) this entry sums: 1 in one
    /// client's snapshot; in a host view, over every process.
    pub clients: u32,
    /// The addresses the server is reached at (one per path).
    pub addresses: Vec<String>,
    /// Sum over all paths.
    pub totals: IoSnapshot,
    /// One entry per network path.
    pub paths: Vec<PathStats>,
    /// The reads and writes of the files of each I/O class (`"log"`,
    /// `"data"`, `"bulk"`; classes with calls only), one entry per
    /// `read_at`/`write_at` (or batch operation) with its latency as the
    /// caller saw it: `reads`, `writes`, bytes, errors and `latency_us`
    /// (`"read"`, `"write"`).
    pub io_classes: BTreeMap<String, IoSnapshot>,
}

/// A network path to a server: a `local:`/`path:` pair of the config.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PathStats {
    /// Local (source) address, when the config binds one.
    pub local: Option<String>,
    /// Server address of this path.
    pub remote: String,
    /// `"up"` (a channel of it is up) or `"down"`; over several
    /// processes also `"partly down"` (see [`state`]).
    pub state: String,
    /// Sum over the path's channels.
    pub totals: IoSnapshot,
    /// One entry per connection (v$dnfs_channels).
    pub channels: Vec<ChannelStats>,
}

/// One connection on a path (v$dnfs_channels).
///
/// Its `totals` carry what Oracle's view shows: `sends` and `receives`,
/// and where the calls of a failed connection went: Oracle moves a broken
/// channel to another path and counts reconnects on the same path and on
/// an alternate one; directnfs keeps each channel on its path and moves the
/// calls instead, so the split is of the calls moved off this channel
/// (`moved_same_path`, `moved_other_path`), beside its own `reconnects`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChannelStats {
    /// Channel number, unique within the client.
    pub id: u32,
    /// The process owning the channel, in a view over several processes.
    pub pid: Option<u32>,
    /// `"up"`, `"down"`, `"connecting"` or `"idle"` (see [`state`]).
    pub state: String,
    /// This channel's I/O.
    pub totals: IoSnapshot,
    /// Calls queued for the channel but not yet written to its socket.
    pub queue_depth: u64,
    /// The connection's send buffer in bytes, as the kernel reports it
    /// (SO_SNDBUF: a fixed `sockbuf` request as capped by
    /// `net.core.wmem_max`, doubled for bookkeeping; or what autotuning has
    /// grown it to); 0 while the channel has no connection.
    pub send_buffer: u64,
    /// The connection's receive buffer in bytes (SO_RCVBUF), likewise.
    pub recv_buffer: u64,
}

/// The [`FileStats::path`] of the record that sums the files whose own
/// records were dropped: the client keeps a bounded number of records,
/// and drops those of files no longer open first (a program may open
/// millions of distinct paths). Not a path: every real one starts with `/`
/// or names a URL.
pub const EVICTED_FILES: &str = "(evicted files)";

/// A file opened through the client (v$dnfs_files: filename, filesize,
/// server, owning process, plus reads, writes, bytes), or the sum of files
/// dropped from the list ([`EVICTED_FILES`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FileStats {
    /// The file's path as the caller named it, or [`EVICTED_FILES`].
    pub path: String,
    /// The server holding it.
    pub server: String,
    /// The size last seen: from the attributes at open, raised by writes
    /// past it and set by `set_len` through this client. `None` when not
    /// known (the evicted total).
    pub size: Option<u64>,
    /// The process that opened it, in a view over several processes.
    pub pid: Option<u32>,
    /// I/O on this file, counted by the caller's calls: one `read_at`,
    /// `write_at` (or batched I/O) is one call however many RPCs it took,
    /// its latency is the time until it returned, and `inflight` counts
    /// calls not yet returned. A write-behind `write_at` returns before its
    /// WRITE is answered: the WRITEs still on the wire show here as
    /// `write_behind_bytes`, and as in-flight calls of the channels.
    pub totals: IoSnapshot,
}

/// Counters and latency of one scope (v$dnfs_stats, per server, path,
/// channel or file).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IoSnapshot {
    /// Calls by NFSv3 procedure name (`"READ"`, ...), non-zero only;
    /// out-of-range procedure numbers under `"OTHER"`.
    pub calls_by_proc: BTreeMap<String, u64>,
    /// READ calls.
    pub reads: u64,
    /// WRITE calls.
    pub writes: u64,
    /// READ payload bytes received.
    pub bytes_read: u64,
    /// WRITE payload bytes sent.
    pub bytes_written: u64,
    /// Calls that completed with an error.
    pub errors: u64,
    /// Calls sent again.
    pub retransmits: u64,
    /// Timer expiries.
    pub timeouts: u64,
    /// Connections re-established.
    pub reconnects: u64,
    /// Calls moved off a failed channel (re-sent elsewhere).
    pub failovers: u64,
    /// Calls written to a socket: first attempts and re-sends.
    pub sends: u64,
    /// Replies received.
    pub receives: u64,
    /// Attempts that ended without a reply (a failed connection, a timeout).
    pub lost: u64,
    /// Lost attempts re-sent on a channel of the same path.
    pub moved_same_path: u64,
    /// Lost attempts re-sent on a channel of another path.
    pub moved_other_path: u64,
    /// READs hedged: sent a second time while outstanding (the book's
    /// multipath chapter, `hedge`), counted where the second copy went.
    pub hedges_sent: u64,
    /// Hedges answered before the first copy (where the hedge went).
    pub hedges_won: u64,
    /// Calls in flight when the snapshot was taken.
    pub inflight: u64,
    /// Highest in-flight depth seen.
    pub inflight_peak: u64,
    /// Bytes of write-behind WRITEs in flight (sent, the writer not waiting
    /// for their reply; unstable mode, `write_behind`).
    pub write_behind_bytes: u64,
    /// Write-behind WRITEs that failed (each error reported by an `fsync`).
    pub write_behind_errors: u64,
    /// `fsync`s that waited for write-behind WRITEs before their COMMIT.
    pub fsync_waits: u64,
    /// Total time those `fsync`s spent waiting, microseconds.
    pub fsync_wait_us: u64,
    /// Latency by class (`"read"`, `"write"`, `"commit"`, `"metadata"`,
    /// `"namespace"`, `"directory"`, `"null"`), classes with calls only.
    pub latency_us: BTreeMap<String, LatencySummary>,
}

impl IoSnapshot {
    /// The summary of live counters: non-zero calls by name, latency
    /// summaries (µs) for the classes that saw a call.
    pub fn from_raw(raw: &RawIoSnapshot) -> Self {
        const NFSPROC3_READ: usize = 6;
        const NFSPROC3_WRITE: usize = 7;
        IoSnapshot {
            calls_by_proc: raw
                .calls_by_name()
                .map(|(n, c)| (n.to_owned(), c))
                .collect(),
            reads: raw.calls[NFSPROC3_READ],
            writes: raw.calls[NFSPROC3_WRITE],
            bytes_read: raw.bytes_read,
            bytes_written: raw.bytes_written,
            errors: raw.errors,
            retransmits: raw.retransmits,
            timeouts: raw.timeouts,
            reconnects: raw.reconnects,
            failovers: raw.failovers,
            sends: raw.sends(),
            receives: raw.receives(),
            lost: raw.lost,
            moved_same_path: raw.moved_same_path,
            moved_other_path: raw.moved_other_path,
            hedges_sent: raw.hedges_sent,
            hedges_won: raw.hedges_won,
            inflight: raw.inflight,
            inflight_peak: raw.inflight_peak,
            write_behind_bytes: raw.write_behind_bytes,
            write_behind_errors: raw.write_behind_errors,
            fsync_waits: raw.fsync_waits,
            fsync_wait_us: raw.fsync_wait_ns / 1000,
            latency_us: ProcClass::ALL
                .iter()
                .zip(&raw.latency)
                .filter(|(_, h)| !h.is_empty())
                .map(|(c, h)| (c.as_str().to_owned(), LatencySummary::from_histogram(h)))
                .collect(),
        }
    }

    /// Sum of all calls.
    pub fn calls(&self) -> u64 {
        self.calls_by_proc.values().sum()
    }

    /// Adds `other` into `self` (another process's, or another scope's):
    /// counters add, latency distributions merge exactly (same buckets),
    /// and the in-flight peak becomes the sum of the peaks, an upper bound.
    pub fn merge(&mut self, other: &IoSnapshot) {
        for (proc_, n) in &other.calls_by_proc {
            let c = self.calls_by_proc.entry(proc_.clone()).or_default();
            *c = c.wrapping_add(*n);
        }
        for (a, b) in [
            (&mut self.reads, other.reads),
            (&mut self.writes, other.writes),
            (&mut self.bytes_read, other.bytes_read),
            (&mut self.bytes_written, other.bytes_written),
            (&mut self.errors, other.errors),
            (&mut self.retransmits, other.retransmits),
            (&mut self.timeouts, other.timeouts),
            (&mut self.reconnects, other.reconnects),
            (&mut self.failovers, other.failovers),
            (&mut self.sends, other.sends),
            (&mut self.receives, other.receives),
            (&mut self.lost, other.lost),
            (&mut self.moved_same_path, other.moved_same_path),
            (&mut self.moved_other_path, other.moved_other_path),
            (&mut self.hedges_sent, other.hedges_sent),
            (&mut self.hedges_won, other.hedges_won),
            (&mut self.inflight, other.inflight),
            (&mut self.inflight_peak, other.inflight_peak),
            (&mut self.write_behind_bytes, other.write_behind_bytes),
            (&mut self.write_behind_errors, other.write_behind_errors),
            (&mut self.fsync_waits, other.fsync_waits),
            (&mut self.fsync_wait_us, other.fsync_wait_us),
        ] {
            *a = a.wrapping_add(b);
        }
        for (class, l) in &other.latency_us {
            match self.latency_us.get_mut(class) {
                Some(mine) => mine.merge(l),
                None => {
                    self.latency_us.insert(class.clone(), l.clone());
                }
            }
        }
    }
}

/// A latency distribution in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LatencySummary {
    /// Number of samples.
    pub count: u64,
    /// Sum of all samples (exact).
    pub sum_us: f64,
    /// Arithmetic mean (exact).
    pub mean: f64,
    /// Smallest sample (exact).
    pub min: f64,
    /// Median (within ~3.2%).
    pub p50: f64,
    /// 90th percentile (within ~3.2%).
    pub p90: f64,
    /// 99th percentile (within ~3.2%).
    pub p99: f64,
    /// 99.9th percentile (within ~3.2%).
    pub p999: f64,
    /// Largest sample (exact).
    pub max: f64,
    /// Non-empty buckets, smallest first, as `(upper_bound_us, count)`;
    /// every sample counted in a bucket is below its upper bound and at least
    /// the previous bucket's. Counts are per bucket, not cumulative.
    pub buckets: Vec<(f64, u64)>,
}

impl LatencySummary {
    /// The summary of a histogram: count, mean, p50/p90/p99/p99.9, min/max
    /// and the non-empty buckets, in µs.
    pub fn from_histogram(h: &HistogramSnapshot) -> Self {
        let us = |ns: u64| ns as f64 / 1_000.0;
        LatencySummary {
            count: h.count(),
            sum_us: us(h.sum()),
            mean: h.mean() / 1_000.0,
            min: us(h.min()),
            p50: us(h.percentile(50.0)),
            p90: us(h.percentile(90.0)),
            p99: us(h.percentile(99.0)),
            p999: us(h.percentile(99.9)),
            max: us(h.max()),
            buckets: h.buckets().map(|b| (us(b.upper_ns), b.count)).collect(),
        }
    }

    /// The histogram this summary was made from, rebuilt from its buckets
    /// (exact: the buckets are those of the live histogram).
    pub fn to_histogram(&self) -> HistogramSnapshot {
        let ns = |us: f64| {
            let v = (us * 1_000.0).round();
            if v.is_finite() && v > 0.0 {
                v as u64
            } else {
                0
            }
        };
        HistogramSnapshot::from_bucket_counts(
            self.buckets
                .iter()
                .map(|&(upper_us, count)| (ns(upper_us).saturating_sub(1), count)),
            ns(self.sum_us),
            ns(self.min),
            ns(self.max),
        )
    }

    /// Adds `other`'s samples; the percentiles are those of the merged
    /// distribution, not an average of percentiles.
    pub fn merge(&mut self, other: &LatencySummary) {
        let mut h = self.to_histogram();
        h.merge(&other.to_histogram());
        *self = LatencySummary::from_histogram(&h);
    }
}

/// A server entry of the tests: filer1 exporting /vol/oradata over NFSv3
/// with 1 MiB transfers, one client.
#[cfg(test)]
pub(crate) fn filer1() -> ServerStats {
    ServerStats {
        name: "filer1".into(),
        export: "/vol/oradata".into(),
        nfs_version: "3".into(),
        rtmax: 1 << 20,
        wtmax: 1 << 20,
        clients: 1,
        ..ServerStats::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use directnfs_engine::stats::{Histogram, IoStats};

    #[test]
    fn channel_states_are_the_names_the_documentation_lists() {
        use directnfs_engine::health::Health;
        assert_eq!(Health::Up.name(), state::UP);
        assert_eq!(Health::Connecting.name(), state::CONNECTING);
        assert_eq!(Health::Idle.name(), state::IDLE);
        let down = Health::Down {
            failures: 1,
            retry_at_ns: 0,
        };
        assert_eq!(down.name(), state::DOWN);
    }

    #[test]
    fn snapshot_round_trips_through_json() {
        let mut io = IoSnapshot {
            reads: 3,
            bytes_read: 24_576,
            ..IoSnapshot::default()
        };
        io.calls_by_proc.insert("READ".into(), 3);
        io.latency_us.insert(
            "read".into(),
            LatencySummary {
                count: 3,
                sum_us: 600.0,
                mean: 200.0,
                min: 150.0,
                p50: 200.0,
                p90: 250.0,
                p99: 250.0,
                p999: 250.0,
                max: 250.0,
                buckets: vec![(160.0, 1), (208.0, 1), (256.0, 1)],
            },
        );
        let snap = StatsSnapshot {
            servers: vec![ServerStats {
                addresses: vec!["10.231.1.2".into()],
                totals: io.clone(),
                paths: vec![PathStats {
                    local: Some("10.231.1.1".into()),
                    remote: "10.231.1.2".into(),
                    state: state::UP.into(),
                    totals: io.clone(),
                    channels: vec![ChannelStats {
                        id: 0,
                        state: state::UP.into(),
                        totals: io.clone(),
                        queue_depth: 2,
                        send_buffer: 2_626_560,
                        recv_buffer: 8_388_608,
                        ..ChannelStats::default()
                    }],
                }],
                ..filer1()
            }],
            files: vec![FileStats {
                path: "/db/oradata/system01.dbf".into(),
                server: "filer1".into(),
                size: Some(1 << 30),
                pid: Some(4242),
                totals: io,
            }],
        };
        let json = serde_json::to_string(&snap).expect("serialise");
        let back: StatsSnapshot = serde_json::from_str(&json).expect("parse");
        assert_eq!(back, snap);
    }

    #[test]
    fn missing_fields_default_so_older_json_still_parses() {
        let back: StatsSnapshot =
            serde_json::from_str(r#"{"servers":[{"name":"f","totals":{"reads":1}}]}"#)
                .expect("parse");
        assert_eq!(back.servers[0].totals.reads, 1);
        assert!(back.files.is_empty());
    }

    #[test]
    fn calls_sums_every_procedure() {
        let mut io = IoSnapshot::default();
        io.calls_by_proc.insert("READ".into(), 3);
        io.calls_by_proc.insert("GETATTR".into(), 2);
        assert_eq!(io.calls(), 5);
    }

    fn io_of(latencies_ns: &[u64]) -> (IoStats, IoSnapshot) {
        let s = IoStats::new();
        for &ns in latencies_ns {
            s.on_submit(6);
            s.on_complete(6, ns, 8192, 0, true);
        }
        let snap = IoSnapshot::from_raw(&s.raw_snapshot());
        (s, snap)
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn merged_snapshots_equal_one_snapshot_of_everything() {
        let a: Vec<u64> = (0..300).map(|i| 50_000 + i * 977).collect();
        let b: Vec<u64> = (0..100).map(|i| 2_000_000 + i * 31_337).collect();
        let (_, mut merged) = io_of(&a);
        let (_, sb) = io_of(&b);
        merged.merge(&sb);
        let all: Vec<u64> = a.iter().chain(&b).copied().collect();
        let (_, want) = io_of(&all);
        assert_eq!(merged.reads, 400);
        assert_eq!(merged.bytes_read, 400 * 8192);
        assert_eq!((merged.sends, merged.receives), (400, 400));
        assert_eq!(merged.latency_us, want.latency_us);
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn a_summary_survives_json_and_rebuilds_its_histogram() {
        let h = Histogram::new();
        for v in [900, 1_000, 80_000, 3_000_000, 7_000_000_000] {
            h.record(v);
        }
        let snap = h.snapshot();
        let summary = LatencySummary::from_histogram(&snap);
        let json = serde_json::to_string(&summary).expect("json");
        let back: LatencySummary = serde_json::from_str(&json).expect("parse");
        assert_eq!(back.to_histogram(), snap);
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn sends_receives_and_moves_come_from_the_counters() {
        let s = IoStats::new();
        for _ in 0..3 {
            s.on_submit(7);
        }
        s.on_complete(7, 1_000, 0, 512, true);
        s.on_lost(7, 2_000);
        s.on_moved(true);
        let io = IoSnapshot::from_raw(&s.raw_snapshot());
        assert_eq!((io.sends, io.receives, io.lost, io.inflight), (3, 1, 1, 1));
        assert_eq!((io.moved_same_path, io.moved_other_path), (0, 1));
        assert_eq!(io.errors, 1);
        s.on_hedge_sent();
        s.on_hedge_won();
        let io = IoSnapshot::from_raw(&s.raw_snapshot());
        assert_eq!((io.hedges_sent, io.hedges_won), (1, 1));
    }
}
