//! The serialisable statistics model: plain data, taken from the live
//! counters at one moment, rendered by [`super::render`] and written as JSON
//! by `dnfs stats`. Fields may be added, never renamed or removed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Path and channel state names used in [`PathStats::state`] and
/// [`ChannelStats::state`].
pub mod state {
    /// Healthy, taking I/O.
    pub const UP: &str = "up";
    /// Failed or cut; I/O has moved elsewhere.
    pub const DOWN: &str = "down";
    /// Being tested (NULL pings) before it takes I/O again.
    pub const PROBING: &str = "probing";
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

/// A server (v$dnfs_servers), with its totals over all paths.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerStats {
    /// The `server:` name from the config, or the URL host.
    pub name: String,
    /// The addresses the server is reached at (one per path).
    pub addresses: Vec<String>,
    /// Sum over all paths.
    pub totals: IoSnapshot,
    /// One entry per network path.
    pub paths: Vec<PathStats>,
}

/// A network path to a server: a `local:`/`path:` pair of the config.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PathStats {
    /// Local (source) address, when the config binds one.
    pub local: Option<String>,
    /// Server address of this path.
    pub remote: String,
    /// `"up"`, `"down"` or `"probing"` (see [`state`]).
    pub state: String,
    /// Sum over the path's channels.
    pub totals: IoSnapshot,
    /// One entry per connection (v$dnfs_channels).
    pub channels: Vec<ChannelStats>,
}

/// One connection on a path (v$dnfs_channels).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChannelStats {
    /// Channel number, unique within the client.
    pub id: u32,
    /// `"up"`, `"down"` or `"probing"` (see [`state`]).
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

/// A file opened through the client (v$dnfs_files: filename, server, reads,
/// writes, bytes), or the sum of files dropped from the list
/// ([`EVICTED_FILES`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FileStats {
    /// The file's path as the caller named it, or [`EVICTED_FILES`].
    pub path: String,
    /// The server holding it.
    pub server: String,
    /// I/O on this file.
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
    /// Calls moved to another path.
    pub failovers: u64,
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
    /// Sum of all calls.
    pub fn calls(&self) -> u64 {
        self.calls_by_proc.values().sum()
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

#[cfg(test)]
mod tests {
    use super::*;

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
                name: "filer1".into(),
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
                        send_buffer: 2626560,
                        recv_buffer: 8388608,
                    }],
                }],
            }],
            files: vec![FileStats {
                path: "/db/oradata/system01.dbf".into(),
                server: "filer1".into(),
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
}
