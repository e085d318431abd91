//! Renders statistics for people (aligned text tables), programs (pretty
//! JSON of the snapshot model) and Prometheus (text exposition format
//! 0.0.4), for one client or process ([`StatsSnapshot`]) or for every
//! process of the host ([`HostStats`]).

use std::fmt::Write as _;
use std::str::FromStr;

use serde::Serialize;

use super::processes::HostStats;
use super::snapshot::{state, IoSnapshot, LatencySummary, StatsSnapshot};

/// Output format of `dnfs stats`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum StatsFormat {
    /// Aligned text tables; latency in µs.
    #[default]
    Text,
    /// The snapshot model as pretty-printed JSON.
    Json,
    /// Prometheus text exposition format.
    Prometheus,
}

impl StatsFormat {
    /// Renders `snapshot` in this format. Only JSON can fail, and only if
    /// serde_json rejects the model, which has no such case.
    pub fn render(self, snapshot: &StatsSnapshot) -> Result<String, serde_json::Error> {
        match self {
            StatsFormat::Text => Ok(render_text(snapshot)),
            StatsFormat::Json => render_json(snapshot),
            StatsFormat::Prometheus => Ok(render_prometheus(snapshot)),
        }
    }

    /// Renders the statistics of every process of `host` in this format.
    pub fn render_host(self, host: &HostStats) -> Result<String, serde_json::Error> {
        match self {
            StatsFormat::Text => Ok(render_host_text(host)),
            StatsFormat::Json => render_json(host),
            StatsFormat::Prometheus => Ok(render_host_prometheus(host)),
        }
    }
}

impl FromStr for StatsFormat {
    type Err = String;

    /// `text`, `json`, `prometheus` (or `prom`), case-insensitive.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "text" => Ok(StatsFormat::Text),
            "json" => Ok(StatsFormat::Json),
            "prometheus" | "prom" => Ok(StatsFormat::Prometheus),
            _ => Err(format!(
                "unknown stats format {s:?} (expected text, json or prometheus)"
            )),
        }
    }
}

/// Any part of the model as pretty-printed JSON, as is.
pub fn render_json<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(value)
}

// ---------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------

/// Human-readable tables, one section per view: SERVERS (v$dnfs_servers),
/// PATHS, CHANNELS (v$dnfs_channels), FILES (v$dnfs_files), CALLS BY
/// PROCEDURE (v$dnfs_stats, per server) and LATENCY (µs) per class for
/// servers, paths and files. Text columns are left-aligned, numbers
/// right-aligned; empty sections are left out. Channels and files carry a
/// `pid` column when the snapshot sums several processes.
pub fn render_text(s: &StatsSnapshot) -> String {
    let mut out = String::new();
    write_tables(&mut out, s);
    if out.is_empty() {
        out.push_str("no statistics\n");
    }
    out
}

/// The host view: a PROCESSES table, then [`render_text`] of the processes
/// summed ([`HostStats::aggregate`]), then each process's latest alert-log
/// lines and the endpoints that could not be read.
pub fn render_host_text(host: &HostStats) -> String {
    let mut procs = Table::new(
        &["pid", "uid", "program"],
        [
            "servers", "files", "calls", "read", "written", "errors", "inflight",
        ],
    );
    let mut alerts = Table::new(&["pid", "line"], []);
    for p in &host.processes {
        let mut io = IoSnapshot::default();
        for srv in &p.stats.servers {
            io.merge(&srv.totals);
        }
        procs.row([
            p.pid.to_string(),
            p.uid.to_string(),
            p.program.clone(),
            p.stats.servers.len().to_string(),
            p.stats.files.len().to_string(),
            io.calls().to_string(),
            fmt_bytes(io.bytes_read),
            fmt_bytes(io.bytes_written),
            io.errors.to_string(),
            io.inflight.to_string(),
        ]);
        for line in &p.alerts {
            alerts.row([p.pid.to_string(), line.clone()]);
        }
    }
    let mut unreadable = Table::new(&["pid", "why"], []);
    for (pid, why) in &host.unreadable {
        unreadable.row([pid.to_string(), why.clone()]);
    }
    let mut out = String::new();
    procs.write(&mut out, &format!("PROCESSES ({})", host.processes.len()));
    write_tables(&mut out, &host.aggregate());
    alerts.write(&mut out, "RECENT ALERTS");
    unreadable.write(&mut out, "UNREADABLE ENDPOINTS");
    if out.is_empty() {
        out.push_str("no directnfs process publishes statistics on this host\n");
    }
    out
}

fn write_tables(out: &mut String, s: &StatsSnapshot) {
    let multi = s
        .servers
        .iter()
        .flat_map(|srv| &srv.paths)
        .flat_map(|p| &p.channels)
        .any(|c| c.pid.is_some())
        || s.files.iter().any(|f| f.pid.is_some());
    let pid_col: &[&'static str] = if multi { &["pid"] } else { &[] };
    let pid_cell = |pid: Option<u32>| -> Vec<String> {
        if multi {
            vec![pid.map_or_else(|| "-".to_owned(), |p| p.to_string())]
        } else {
            Vec::new()
        }
    };

    let mut servers = Table::new(
        &["server", "export", "vers", "addresses"],
        ["clients", "rtmax", "wtmax"].into_iter().chain(IO_COLUMNS),
    );
    let mut paths = Table::new(&["server", "local", "remote", "state"], IO_COLUMNS);
    let mut channels = Table::new(
        &[pid_col, &["server", "local", "remote", "channel", "state"]].concat(),
        [
            "sends",
            "recvs",
            "reconn",
            "moved_same",
            "moved_other",
            "hedges",
            "hedge_won",
            "errors",
            "inflight",
            "peak",
            "queue",
            "sndbuf",
            "rcvbuf",
        ],
    );
    let mut files = Table::new(
        &[&["file"], pid_col, &["server"]].concat(),
        [
            "size", "reads", "writes", "read", "written", "errors", "inflight",
        ]
        .into_iter()
        .chain(WRITE_BEHIND_COLUMNS),
    );
    let mut latency = Table::new(
        &["scope", "name", "class"],
        ["count", "mean", "p50", "p90", "p99", "p99.9", "max"],
    );
    let mut procs = Table::new(&["server", "export", "proc"], ["calls"]);

    let mut lat = |kind: &str, name: String, io: &IoSnapshot| {
        for (class, l) in &io.latency_us {
            latency.row(
                [kind.to_owned(), name.clone(), class.clone()]
                    .into_iter()
                    .chain(latency_cells(l)),
            );
        }
    };

    for srv in &s.servers {
        servers.row(
            [
                srv.name.clone(),
                srv.export.clone(),
                srv.nfs_version.clone(),
                srv.addresses.join(","),
                srv.clients.to_string(),
                srv.rtmax.to_string(),
                srv.wtmax.to_string(),
            ]
            .into_iter()
            .chain(io_cells(&srv.totals)),
        );
        lat(
            "server",
            format!("{}:{}", srv.name, srv.export),
            &srv.totals,
        );
        // The reads and writes of each I/O class, as the callers saw them
        // (the log class's p99 beside the bulk class's).
        for (class, io) in &srv.io_classes {
            lat(
                "io_class",
                format!("{}:{} {class}", srv.name, srv.export),
                io,
            );
        }
        for (proc_, n) in &srv.totals.calls_by_proc {
            procs.row([
                srv.name.clone(),
                srv.export.clone(),
                proc_.clone(),
                n.to_string(),
            ]);
        }
        for p in &srv.paths {
            let local = p.local.clone().unwrap_or_else(|| "*".to_owned());
            paths.row(
                [
                    srv.name.clone(),
                    local.clone(),
                    p.remote.clone(),
                    p.state.clone(),
                ]
                .into_iter()
                .chain(io_cells(&p.totals)),
            );
            lat(
                "path",
                format!("{} {local}->{}", srv.name, p.remote),
                &p.totals,
            );
            for c in &p.channels {
                let t = &c.totals;
                channels.row(pid_cell(c.pid).into_iter().chain([
                    srv.name.clone(),
                    local.clone(),
                    p.remote.clone(),
                    c.id.to_string(),
                    c.state.clone(),
                    t.sends.to_string(),
                    t.receives.to_string(),
                    t.reconnects.to_string(),
                    t.moved_same_path.to_string(),
                    t.moved_other_path.to_string(),
                    t.hedges_sent.to_string(),
                    t.hedges_won.to_string(),
                    t.errors.to_string(),
                    t.inflight.to_string(),
                    t.inflight_peak.to_string(),
                    c.queue_depth.to_string(),
                    c.send_buffer.to_string(),
                    c.recv_buffer.to_string(),
                ]));
            }
        }
    }
    for f in &s.files {
        let t = &f.totals;
        files.row(
            std::iter::once(f.path.clone())
                .chain(pid_cell(f.pid))
                .chain([
                    f.server.clone(),
                    f.size.map_or_else(|| "-".to_owned(), fmt_bytes),
                    t.reads.to_string(),
                    t.writes.to_string(),
                    fmt_bytes(t.bytes_read),
                    fmt_bytes(t.bytes_written),
                    t.errors.to_string(),
                    t.inflight.to_string(),
                ])
                .chain(write_behind_cells(t)),
        );
        let name = match f.pid {
            Some(pid) => format!("{} [{pid}]", f.path),
            None => f.path.clone(),
        };
        lat("file", name, t);
    }

    for (title, t) in [
        ("SERVERS (v$dnfs_servers)", &servers),
        ("PATHS", &paths),
        ("CHANNELS (v$dnfs_channels)", &channels),
        ("FILES (v$dnfs_files)", &files),
        ("CALLS BY PROCEDURE (v$dnfs_stats)", &procs),
        ("LATENCY (µs)", &latency),
    ] {
        t.write(out, title);
    }
}

const IO_COLUMNS: [&str; 12] = [
    "calls", "reads", "writes", "read", "written", "errors", "retrans", "timeouts", "reconn",
    "failover", "inflight", "peak",
];

fn io_cells(io: &IoSnapshot) -> impl Iterator<Item = String> {
    [
        io.calls().to_string(),
        io.reads.to_string(),
        io.writes.to_string(),
        fmt_bytes(io.bytes_read),
        fmt_bytes(io.bytes_written),
        io.errors.to_string(),
        io.retransmits.to_string(),
        io.timeouts.to_string(),
        io.reconnects.to_string(),
        io.failovers.to_string(),
        io.inflight.to_string(),
        io.inflight_peak.to_string(),
    ]
    .into_iter()
}

/// Per file: write-behind bytes in flight, write-behind errors, and the
/// time `fsync` spent waiting for write-behind WRITEs (total, in ms).
const WRITE_BEHIND_COLUMNS: [&str; 3] = ["wb_out", "wb_err", "fsync_wait_ms"];

fn write_behind_cells(io: &IoSnapshot) -> impl Iterator<Item = String> {
    [
        fmt_bytes(io.write_behind_bytes),
        io.write_behind_errors.to_string(),
        format!("{:.1}", io.fsync_wait_us as f64 / 1000.0),
    ]
    .into_iter()
}

fn latency_cells(l: &LatencySummary) -> impl Iterator<Item = String> {
    let us = |v: f64| format!("{v:.1}");
    [
        l.count.to_string(),
        us(l.mean),
        us(l.p50),
        us(l.p90),
        us(l.p99),
        us(l.p999),
        us(l.max),
    ]
    .into_iter()
}

/// `512 B`, `8.0 KiB`, `1.5 GiB`.
pub(crate) fn fmt_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// A table whose first `left` columns are left-aligned and the rest
/// right-aligned, separated by two spaces.
struct Table {
    headers: Vec<&'static str>,
    left: usize,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(left: &[&'static str], right: impl IntoIterator<Item = &'static str>) -> Self {
        Table {
            headers: left.iter().copied().chain(right).collect(),
            left: left.len(),
            rows: Vec::new(),
        }
    }

    fn row(&mut self, cells: impl IntoIterator<Item = String>) {
        self.rows.push(cells.into_iter().collect());
    }

    fn write(&self, out: &mut String, title: &str) {
        if self.rows.is_empty() {
            return;
        }
        let width = |i: usize| {
            self.rows
                .iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .chain(std::iter::once(self.headers[i].chars().count()))
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..self.headers.len()).map(width).collect();
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(title);
        out.push('\n');
        let header: Vec<String> = self.headers.iter().map(|h| (*h).to_owned()).collect();
        for cells in std::iter::once(&header).chain(&self.rows) {
            let mut line = String::new();
            for (i, w) in widths.iter().enumerate() {
                let cell = cells.get(i).map_or("", String::as_str);
                if i > 0 {
                    line.push_str("  ");
                }
                // `{:<w$}` pads by chars, so "µs" aligns too.
                let _ = if i < self.left {
                    write!(line, "{cell:<w$}")
                } else {
                    write!(line, "{cell:>w$}")
                };
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
}

// ---------------------------------------------------------------------------
// Prometheus
// ---------------------------------------------------------------------------

/// `le` bounds of `directnfs_latency_seconds`, in ns: 1-2-5 steps from 1 µs
/// to 100 s. Fixed, so series from every scope and every scrape aggregate.
const LE_LADDER_NS: [u64; 25] = [
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
    1_000_000_000,
    2_000_000_000,
    5_000_000_000,
    10_000_000_000,
    20_000_000_000,
    50_000_000_000,
    100_000_000_000,
];

/// A plain counter family: one sample per scope.
struct Counter {
    name: &'static str,
    help: &'static str,
    get: fn(&IoSnapshot) -> u64,
}

const COUNTERS: [Counter; 14] = [
    Counter {
        name: "directnfs_bytes_read_total",
        help: "READ payload bytes received.",
        get: |io| io.bytes_read,
    },
    Counter {
        name: "directnfs_bytes_written_total",
        help: "WRITE payload bytes sent.",
        get: |io| io.bytes_written,
    },
    Counter {
        name: "directnfs_errors_total",
        help: "Calls completed with an error, and attempts lost.",
        get: |io| io.errors,
    },
    Counter {
        name: "directnfs_retransmits_total",
        help: "Calls sent again after a timeout or lost connection.",
        get: |io| io.retransmits,
    },
    Counter {
        name: "directnfs_timeouts_total",
        help: "Call timer expiries.",
        get: |io| io.timeouts,
    },
    Counter {
        name: "directnfs_reconnects_total",
        help: "Connections re-established.",
        get: |io| io.reconnects,
    },
    Counter {
        name: "directnfs_failovers_total",
        help: "Calls moved off a failed channel.",
        get: |io| io.failovers,
    },
    Counter {
        name: "directnfs_sends_total",
        help: "Calls written to a socket, re-sends included.",
        get: |io| io.sends,
    },
    Counter {
        name: "directnfs_receives_total",
        help: "Replies received.",
        get: |io| io.receives,
    },
    Counter {
        name: "directnfs_moved_same_path_total",
        help: "Lost attempts re-sent on a channel of the same path.",
        get: |io| io.moved_same_path,
    },
    Counter {
        name: "directnfs_moved_other_path_total",
        help: "Lost attempts re-sent on a channel of another path.",
        get: |io| io.moved_other_path,
    },
    Counter {
        name: "directnfs_hedges_total",
        help: "READs sent a second time while outstanding (hedged reads).",
        get: |io| io.hedges_sent,
    },
    Counter {
        name: "directnfs_hedges_won_total",
        help: "Hedged READs whose second copy was answered first.",
        get: |io| io.hedges_won,
    },
    Counter {
        name: "directnfs_write_behind_errors_total",
        help: "Write-behind WRITEs that failed (each reported by an fsync).",
        get: |io| io.write_behind_errors,
    },
];

type Labels = Vec<(&'static str, String)>;

/// Reads one gauge's value off a scope (`None`: the scope has no such gauge).
type GaugeOf = fn(&Scope<'_>) -> Option<u64>;

/// One labelled source of samples: a server, path, channel or file.
struct Scope<'a> {
    labels: Labels,
    io: &'a IoSnapshot,
    state: Option<&'a str>,
    queue_depth: Option<u64>,
    /// Effective socket buffers (channels): send, receive; 0 without a connection.
    buffers: Option<(u64, u64)>,
    /// Last known size (files).
    size: Option<u64>,
    /// rtmax, wtmax (servers).
    transfer: Option<(u32, u32)>,
}

/// Prometheus text exposition format (version 0.0.4) of one snapshot.
///
/// Every series has a `level` label (`server`, `io_class`, `path`, `channel`
/// or `file`) because the levels overlap — a server's totals are the sum of
/// its paths — so sum within one level only. Labels: `server` and `export`;
/// `io_class` (`log`, `data`, `bulk`: the reads and writes of the files of
/// that class, as their callers saw them); `path` (the path's remote
/// address) and `local` (when bound) for paths and channels; `channel` for
/// channels; `file` for files; `proc` on
/// `directnfs_calls_total`; `class` on `directnfs_latency_seconds`;
/// `direction` on `directnfs_socket_buffer_bytes`, `op` on
/// `directnfs_transfer_max_bytes`.
///
/// Latency buckets use a fixed 1-2-5 ladder from 1 µs to 100 s. They are
/// re-binned from the finer histogram buckets, each of which counts under
/// the first `le` at or above its upper edge: a count is never above the
/// true number of samples `<= le`, and below it by at most the samples of
/// the one fine bucket (≤ 1/16 wide) that straddles `le`.
pub fn render_prometheus(s: &StatsSnapshot) -> String {
    let mut out = String::new();
    write_families(&mut out, &scopes(s, &[]));
    out
}

/// Prometheus exposition of every process of the host: the series of
/// [`render_prometheus`], each with a `pid` label, and
/// `directnfs_process_info{pid, program, uid} 1` per process.
pub fn render_host_prometheus(host: &HostStats) -> String {
    let mut out = String::new();
    family(
        &mut out,
        "directnfs_process_info",
        "gauge",
        "A directnfs process publishing statistics (always 1).",
    );
    for p in &host.processes {
        sample(
            &mut out,
            "directnfs_process_info",
            &[
                ("pid", p.pid.to_string()),
                ("program", p.program.clone()),
                ("uid", p.uid.to_string()),
            ],
            &[],
            "1",
        );
    }
    let all: Vec<Scope<'_>> = host
        .processes
        .iter()
        .flat_map(|p| scopes(&p.stats, &[("pid", p.pid.to_string())]))
        .collect();
    write_families(&mut out, &all);
    out
}

fn write_families(out: &mut String, scopes: &[Scope<'_>]) {
    family(
        out,
        "directnfs_calls_total",
        "counter",
        "NFS calls sent, by procedure.",
    );
    for sc in scopes {
        for (proc_, n) in &sc.io.calls_by_proc {
            sample(
                out,
                "directnfs_calls_total",
                &sc.labels,
                &[("proc", proc_)],
                &n.to_string(),
            );
        }
    }

    for c in COUNTERS {
        family(out, c.name, "counter", c.help);
        for sc in scopes {
            sample(out, c.name, &sc.labels, &[], &(c.get)(sc.io).to_string());
        }
    }
    // Seconds, as Prometheus wants base units (the model counts µs).
    family(
        out,
        "directnfs_fsync_wait_seconds_total",
        "counter",
        "Time fsync spent waiting for write-behind WRITEs.",
    );
    for sc in scopes {
        let ns = sc.io.fsync_wait_us.saturating_mul(1000);
        sample(
            out,
            "directnfs_fsync_wait_seconds_total",
            &sc.labels,
            &[],
            &seconds_from_ns(ns),
        );
    }

    let gauges: [(&str, &str, GaugeOf); 4] = [
        ("directnfs_inflight", "Calls in flight.", |sc| {
            Some(sc.io.inflight)
        }),
        (
            "directnfs_write_behind_bytes",
            "Bytes of write-behind WRITEs in flight.",
            |sc| Some(sc.io.write_behind_bytes),
        ),
        (
            "directnfs_inflight_peak",
            "Highest number of calls in flight seen.",
            |sc| Some(sc.io.inflight_peak),
        ),
        (
            "directnfs_queue_depth",
            "Calls queued on a channel, not yet sent.",
            |sc| sc.queue_depth,
        ),
    ];
    for (name, help, get) in gauges {
        family(out, name, "gauge", help);
        for sc in scopes {
            if let Some(v) = get(sc) {
                sample(out, name, &sc.labels, &[], &v.to_string());
            }
        }
    }
    family(
        out,
        "directnfs_up",
        "gauge",
        "1 if the path or channel is up, 0 if down, connecting or idle.",
    );
    for sc in scopes {
        if let Some(st) = sc.state {
            let up = if st == state::UP { "1" } else { "0" };
            sample(out, "directnfs_up", &sc.labels, &[], up);
        }
    }
    family(
        out,
        "directnfs_socket_buffer_bytes",
        "gauge",
        "A channel's effective socket buffer as the kernel reports it (direction: send or receive; 0 while it has no connection).",
    );
    for sc in scopes {
        if let Some((snd, rcv)) = sc.buffers {
            for (dir, v) in [("send", snd), ("receive", rcv)] {
                let d = [("direction", dir)];
                sample(
                    out,
                    "directnfs_socket_buffer_bytes",
                    &sc.labels,
                    &d,
                    &v.to_string(),
                );
            }
        }
    }
    family(
        out,
        "directnfs_file_size_bytes",
        "gauge",
        "Size of an open file, as last seen by the client.",
    );
    for sc in scopes {
        if let Some(v) = sc.size {
            sample(
                out,
                "directnfs_file_size_bytes",
                &sc.labels,
                &[],
                &v.to_string(),
            );
        }
    }
    family(
        out,
        "directnfs_transfer_max_bytes",
        "gauge",
        "Largest READ (op=read) or WRITE (op=write) sent: FSINFO rtmax/wtmax clamped by rsize/wsize.",
    );
    for sc in scopes {
        if let Some((r, w)) = sc.transfer {
            for (op, v) in [("read", r), ("write", w)] {
                let o = [("op", op)];
                sample(
                    out,
                    "directnfs_transfer_max_bytes",
                    &sc.labels,
                    &o,
                    &v.to_string(),
                );
            }
        }
    }

    family(
        out,
        "directnfs_latency_seconds",
        "histogram",
        "Call latency, first send to final reply, by class.",
    );
    for sc in scopes {
        for (class, l) in &sc.io.latency_us {
            latency_histogram(out, &sc.labels, class, l);
        }
    }
}

fn scopes<'a>(s: &'a StatsSnapshot, extra: &[(&'static str, String)]) -> Vec<Scope<'a>> {
    let mut v = Vec::new();
    let with = |level: &str, rest: Labels| -> Labels {
        let mut l: Labels = vec![("level", level.to_owned())];
        l.extend(extra.iter().cloned());
        l.extend(rest);
        l
    };
    for srv in &s.servers {
        let server = vec![("server", srv.name.clone()), ("export", srv.export.clone())];
        v.push(Scope {
            labels: with("server", server.clone()),
            io: &srv.totals,
            state: None,
            queue_depth: None,
            buffers: None,
            size: None,
            transfer: Some((srv.rtmax, srv.wtmax)),
        });
        for (class, io) in &srv.io_classes {
            let mut labels = server.clone();
            labels.push(("io_class", class.clone()));
            v.push(Scope {
                labels: with("io_class", labels),
                io,
                state: None,
                queue_depth: None,
                buffers: None,
                size: None,
                transfer: None,
            });
        }
        for p in &srv.paths {
            let mut path = server.clone();
            path.push(("path", p.remote.clone()));
            if let Some(local) = &p.local {
                path.push(("local", local.clone()));
            }
            for c in &p.channels {
                let mut cl = path.clone();
                cl.push(("channel", c.id.to_string()));
                v.push(Scope {
                    labels: with("channel", cl),
                    io: &c.totals,
                    state: Some(&c.state),
                    queue_depth: Some(c.queue_depth),
                    buffers: Some((c.send_buffer, c.recv_buffer)),
                    size: None,
                    transfer: None,
                });
            }
            v.push(Scope {
                labels: with("path", path),
                io: &p.totals,
                state: Some(&p.state),
                queue_depth: None,
                buffers: None,
                size: None,
                transfer: None,
            });
        }
    }
    for f in &s.files {
        v.push(Scope {
            labels: with(
                "file",
                vec![("server", f.server.clone()), ("file", f.path.clone())],
            ),
            io: &f.totals,
            state: None,
            queue_depth: None,
            buffers: None,
            size: f.size,
            transfer: None,
        });
    }
    v
}

fn latency_histogram(
    out: &mut String,
    labels: &[(&'static str, String)],
    class: &str,
    l: &LatencySummary,
) {
    const NAME: &str = "directnfs_latency_seconds";
    let bucket = format!("{NAME}_bucket");
    let mut fine = l.buckets.iter().peekable();
    let mut cumulative = 0u64;
    for le_ns in LE_LADDER_NS {
        let le_us = le_ns as f64 / 1_000.0;
        while let Some(&&(upper_us, n)) = fine.peek() {
            if upper_us > le_us {
                break;
            }
            cumulative = cumulative.saturating_add(n);
            fine.next();
        }
        let le = seconds_from_ns(le_ns);
        let v = cumulative.min(l.count).to_string();
        sample(out, &bucket, labels, &[("class", class), ("le", &le)], &v);
    }
    let count = l.count.to_string();
    sample(
        out,
        &bucket,
        labels,
        &[("class", class), ("le", "+Inf")],
        &count,
    );
    let sum = l.sum_us / 1_000_000.0;
    let sum = if sum.is_finite() {
        sum.to_string()
    } else {
        "NaN".to_owned()
    };
    sample(
        out,
        &format!("{NAME}_sum"),
        labels,
        &[("class", class)],
        &sum,
    );
    sample(
        out,
        &format!("{NAME}_count"),
        labels,
        &[("class", class)],
        &count,
    );
}

/// Exact decimal seconds of a nanosecond count: `0.000001`, `0.5`, `100`.
fn seconds_from_ns(ns: u64) -> String {
    let (int, frac) = (ns / 1_000_000_000, ns % 1_000_000_000);
    if frac == 0 {
        return int.to_string();
    }
    let frac = format!("{frac:09}");
    format!("{int}.{}", frac.trim_end_matches('0'))
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {}", escape_help(help));
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn sample(
    out: &mut String,
    name: &str,
    labels: &[(&str, String)],
    extra: &[(&str, &str)],
    value: &str,
) {
    out.push_str(name);
    let all = labels
        .iter()
        .map(|(k, v)| (*k, v.as_str()))
        .chain(extra.iter().copied());
    for (i, (k, v)) in all.enumerate() {
        out.push(if i == 0 { '{' } else { ',' });
        let _ = write!(out, "{k}=\"{}\"", escape_label(v));
    }
    if !labels.is_empty() || !extra.is_empty() {
        out.push('}');
    }
    out.push(' ');
    out.push_str(value);
    out.push('\n');
}

/// Label values escape `\`, `"` and newline.
fn escape_label(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

/// HELP text escapes `\` and newline.
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashSet};

    use super::*;
    use crate::stats::{ChannelStats, FileStats, PathStats, ProcessStats, ServerStats};
    use directnfs_engine::stats::IoStats;
    use directnfs_engine::IoClass;

    const READ: u32 = 6;
    const WRITE: u32 = 7;
    const GETATTR: u32 = 1;

    fn io(reads: u64, writes: u64) -> IoSnapshot {
        let s = IoStats::new();
        for i in 0..reads {
            s.on_submit(READ);
            s.on_complete(READ, 80_000 + i * 7_919, 8192, 0, true);
        }
        for i in 0..writes {
            s.on_submit(WRITE);
            s.on_complete(WRITE, 300_000 + i * 104_729, 0, 8192, i % 10 != 0);
        }
        s.on_submit(GETATTR);
        s.on_complete(GETATTR, 40_000, 0, 0, true);
        s.on_submit(READ);
        s.on_retransmit();
        s.on_timeout();
        IoSnapshot::from_raw(&s.raw_snapshot())
    }

    fn sample_snapshot() -> StatsSnapshot {
        StatsSnapshot {
            servers: vec![ServerStats {
                addresses: vec!["10.231.1.2".into(), "10.231.2.2".into()],
                totals: io(400, 100),
                paths: vec![
                    PathStats {
                        local: Some("10.231.1.1".into()),
                        remote: "10.231.1.2".into(),
                        state: "up".into(),
                        totals: io(300, 60),
                        channels: vec![
                            ChannelStats {
                                id: 0,
                                state: "up".into(),
                                totals: io(150, 30),
                                queue_depth: 3,
                                send_buffer: 8 << 20,
                                recv_buffer: 8 << 20,
                                ..ChannelStats::default()
                            },
                            ChannelStats {
                                id: 1,
                                state: "up".into(),
                                totals: io(150, 30),
                                queue_depth: 0,
                                send_buffer: 87040,
                                recv_buffer: 131072,
                                ..ChannelStats::default()
                            },
                        ],
                    },
                    PathStats {
                        local: None,
                        remote: "10.231.2.2".into(),
                        state: "down".into(),
                        totals: io(100, 40),
                        channels: vec![ChannelStats {
                            id: 2,
                            state: "probing".into(),
                            totals: io(100, 40),
                            queue_depth: 0,
                            ..ChannelStats::default()
                        }],
                    },
                ],
                ..crate::stats::snapshot::filer1()
            }],
            files: vec![FileStats {
                path: "/db/oradata/users01.dbf".into(),
                server: "filer1".into(),
                size: Some(8 << 20),
                pid: None,
                totals: io(400, 100),
            }],
        }
    }

    /// One parsed sample line: `name{labels} value`.
    #[derive(Debug)]
    struct Sample {
        name: String,
        labels: BTreeMap<String, String>,
        value: f64,
    }

    fn is_name_start(c: char) -> bool {
        c.is_ascii_alphabetic() || c == '_' || c == ':'
    }

    fn is_name_char(c: char) -> bool {
        is_name_start(c) || c.is_ascii_digit()
    }

    /// Parses a sample line by the exposition grammar, or says why not.
    fn parse_sample(line: &str) -> Result<Sample, String> {
        let mut it = line.chars().peekable();
        let mut name = String::new();
        match it.next() {
            Some(c) if is_name_start(c) => name.push(c),
            _ => return Err("bad metric name start".into()),
        }
        while let Some(&c) = it.peek() {
            if !is_name_char(c) {
                break;
            }
            name.push(c);
            it.next();
        }
        let mut labels = BTreeMap::new();
        if it.peek() == Some(&'{') {
            it.next();
            loop {
                let mut key = String::new();
                while let Some(&c) = it.peek() {
                    if !(c.is_ascii_alphanumeric() || c == '_') {
                        break;
                    }
                    key.push(c);
                    it.next();
                }
                if key.is_empty() || !key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                {
                    return Err(format!("bad label name in {line}"));
                }
                if it.next() != Some('=') || it.next() != Some('"') {
                    return Err(format!("expected =\" after {key}"));
                }
                let mut val = String::new();
                loop {
                    match it.next() {
                        Some('\\') => match it.next() {
                            Some('\\') => val.push('\\'),
                            Some('"') => val.push('"'),
                            Some('n') => val.push('\n'),
                            other => return Err(format!("bad escape {other:?}")),
                        },
                        Some('"') => break,
                        Some('\n') | None => return Err("unterminated label value".into()),
                        Some(c) => val.push(c),
                    }
                }
                if labels.insert(key.clone(), val).is_some() {
                    return Err(format!("duplicate label {key}"));
                }
                match it.next() {
                    Some(',') => continue,
                    Some('}') => break,
                    other => return Err(format!("expected , or }} got {other:?}")),
                }
            }
        }
        if it.next() != Some(' ') {
            return Err(format!("expected one space before the value: {line}"));
        }
        let rest: String = it.collect();
        let value = match rest.as_str() {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            "NaN" => f64::NAN,
            v => v
                .parse::<f64>()
                .map_err(|e| format!("bad value {v:?}: {e}"))?,
        };
        Ok(Sample {
            name,
            labels,
            value,
        })
    }

    /// Parses a whole exposition, checking comment lines, that every sample
    /// follows the TYPE of its family and that families are contiguous.
    fn parse_exposition(text: &str) -> Vec<Sample> {
        let mut types: BTreeMap<String, String> = BTreeMap::new();
        let mut current: Option<String> = None;
        let mut finished = HashSet::new();
        let mut out = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# ") {
                let mut parts = rest.splitn(3, ' ');
                let (kw, name, tail) = (parts.next(), parts.next(), parts.next());
                let name = name.expect("comment names a metric").to_owned();
                assert!(name.chars().all(is_name_char), "{line}");
                match kw {
                    Some("HELP") => assert!(tail.is_some_and(|t| !t.is_empty()), "{line}"),
                    Some("TYPE") => {
                        let t = tail.expect("type");
                        assert!(["counter", "gauge", "histogram"].contains(&t), "{line}");
                        assert!(
                            types.insert(name.clone(), t.to_owned()).is_none(),
                            "TYPE twice: {line}"
                        );
                        if let Some(prev) = current.replace(name) {
                            finished.insert(prev);
                        }
                    }
                    _ => panic!("unexpected comment {line}"),
                }
                continue;
            }
            assert!(!line.is_empty(), "no blank lines");
            let s = parse_sample(line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
            let family = current.clone().expect("sample before any TYPE");
            let ok = match types[&family].as_str() {
                "histogram" => [
                    format!("{family}_bucket"),
                    format!("{family}_sum"),
                    format!("{family}_count"),
                ]
                .contains(&s.name),
                _ => s.name == family,
            };
            assert!(ok, "{} outside its family {family}", s.name);
            assert!(!finished.contains(&family));
            out.push(s);
        }
        out
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn prometheus_lines_follow_the_exposition_grammar() {
        let text = render_prometheus(&sample_snapshot());
        assert!(text.ends_with('\n'));
        let samples = parse_exposition(&text);
        assert!(!samples.is_empty());
        for s in &samples {
            assert!(s.name.starts_with("directnfs_"), "{}", s.name);
            assert!(s.labels.contains_key("level"), "{s:?}");
            assert!(s.labels.contains_key("server"), "{s:?}");
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn prometheus_declares_the_expected_families() {
        let text = render_prometheus(&sample_snapshot());
        for (name, kind) in [
            ("directnfs_calls_total", "counter"),
            ("directnfs_bytes_read_total", "counter"),
            ("directnfs_bytes_written_total", "counter"),
            ("directnfs_errors_total", "counter"),
            ("directnfs_retransmits_total", "counter"),
            ("directnfs_timeouts_total", "counter"),
            ("directnfs_reconnects_total", "counter"),
            ("directnfs_failovers_total", "counter"),
            ("directnfs_inflight", "gauge"),
            ("directnfs_inflight_peak", "gauge"),
            ("directnfs_write_behind_bytes", "gauge"),
            ("directnfs_write_behind_errors_total", "counter"),
            ("directnfs_fsync_wait_seconds_total", "counter"),
            ("directnfs_queue_depth", "gauge"),
            ("directnfs_up", "gauge"),
            ("directnfs_sends_total", "counter"),
            ("directnfs_receives_total", "counter"),
            ("directnfs_moved_same_path_total", "counter"),
            ("directnfs_moved_other_path_total", "counter"),
            ("directnfs_hedges_total", "counter"),
            ("directnfs_hedges_won_total", "counter"),
            ("directnfs_socket_buffer_bytes", "gauge"),
            ("directnfs_file_size_bytes", "gauge"),
            ("directnfs_transfer_max_bytes", "gauge"),
            ("directnfs_latency_seconds", "histogram"),
        ] {
            assert!(text.contains(&format!("# TYPE {name} {kind}\n")), "{name}");
            assert!(text.contains(&format!("# HELP {name} ")), "{name}");
        }
    }

    /// A snapshot whose server has log writes and bulk reads.
    fn classed_snapshot() -> StatsSnapshot {
        let classes = crate::stats::classes::IoClassStats::default();
        for i in 0..5 {
            classes.record(IoClass::Log, WRITE, 150_000 + i * 1_000, 0, 8192, true);
        }
        classes.record(IoClass::Bulk, READ, 20_000_000, 1 << 20, 0, true);
        let mut s = sample_snapshot();
        s.servers[0].io_classes = classes.snapshot();
        s
    }

    #[test]
    fn text_latency_has_a_row_per_io_class_and_call_class() {
        let text = render_text(&classed_snapshot());
        let rows = section(&text, "LATENCY (µs)");
        let class_rows: Vec<&&str> = rows.iter().filter(|l| l.starts_with("io_class")).collect();
        assert_eq!(class_rows.len(), 2, "{rows:#?}");
        assert!(
            class_rows[0].contains("filer1:/vol/oradata bulk") && class_rows[0].contains(" read ")
        );
        assert!(
            class_rows[1].contains("filer1:/vol/oradata log") && class_rows[1].contains(" write ")
        );
        // Five log writes: the count column says so.
        assert!(
            class_rows[1].split_whitespace().any(|c| c == "5"),
            "{}",
            class_rows[1]
        );
        // Without classed I/O there is no io_class row.
        assert!(!render_text(&sample_snapshot()).contains("io_class"));
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn prometheus_has_an_io_class_level_with_its_calls_and_latency() {
        let samples = parse_exposition(&render_prometheus(&classed_snapshot()));
        let of = |name: &str, class: &str| {
            samples
                .iter()
                .filter(|s| s.name == name && s.labels["level"] == "io_class")
                .filter(|s| s.labels.get("io_class").map(String::as_str) == Some(class))
                .map(|s| s.value)
                .collect::<Vec<f64>>()
        };
        assert_eq!(of("directnfs_bytes_written_total", "log"), [5.0 * 8192.0]);
        assert_eq!(of("directnfs_bytes_read_total", "bulk"), [1048576.0]);
        assert_eq!(of("directnfs_latency_seconds_count", "log"), [5.0]);
        assert!(of("directnfs_bytes_read_total", "data").is_empty());
        let log = samples
            .iter()
            .find(|s| s.labels.get("io_class").map(String::as_str) == Some("log"))
            .unwrap();
        assert_eq!(
            (log.labels["server"].as_str(), log.labels["export"].as_str()),
            ("filer1", "/vol/oradata")
        );
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn prometheus_calls_carry_server_path_channel_and_proc_labels() {
        let samples = parse_exposition(&render_prometheus(&sample_snapshot()));
        let s = samples
            .iter()
            .find(|s| {
                s.name == "directnfs_calls_total"
                    && s.labels.get("channel").map(String::as_str) == Some("0")
                    && s.labels.get("proc").map(String::as_str) == Some("READ")
            })
            .expect("channel 0 READ calls");
        assert_eq!(s.labels["level"], "channel");
        assert_eq!(s.labels["server"], "filer1");
        assert_eq!(s.labels["path"], "10.231.1.2");
        assert_eq!(s.labels["export"], "/vol/oradata");
        assert_eq!(s.labels["local"], "10.231.1.1");
        assert_eq!(s.value, 151.0);
        let f = samples
            .iter()
            .find(|s| s.name == "directnfs_bytes_read_total" && s.labels["level"] == "file")
            .expect("file bytes");
        assert_eq!(f.labels["file"], "/db/oradata/users01.dbf");
        assert_eq!(f.value, 400.0 * 8192.0);
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn prometheus_buckets_are_cumulative_and_end_at_inf_equal_to_count() {
        let samples = parse_exposition(&render_prometheus(&sample_snapshot()));
        let key = |s: &Sample| {
            let mut l = s.labels.clone();
            l.remove("le");
            format!("{l:?}")
        };
        let mut series: BTreeMap<String, Vec<(String, f64)>> = BTreeMap::new();
        let mut counts = BTreeMap::new();
        let mut sums = BTreeMap::new();
        for s in &samples {
            match s.name.as_str() {
                "directnfs_latency_seconds_bucket" => series
                    .entry(key(s))
                    .or_default()
                    .push((s.labels["le"].clone(), s.value)),
                "directnfs_latency_seconds_count" => {
                    counts.insert(key(s), s.value);
                }
                "directnfs_latency_seconds_sum" => {
                    sums.insert(key(s), s.value);
                }
                _ => {}
            }
        }
        assert!(!series.is_empty());
        for (k, buckets) in &series {
            let (last_le, last) = buckets.last().expect("buckets");
            assert_eq!(last_le, "+Inf", "{k}");
            assert_eq!(*last, counts[k], "{k}");
            assert!(sums[k] > 0.0, "{k}");
            let mut prev_le = f64::NEG_INFINITY;
            let mut prev = 0.0;
            for (le, v) in buckets {
                let le: f64 = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().expect("le")
                };
                assert!(le > prev_le, "{k}: le increasing");
                assert!(*v >= prev, "{k}: cumulative at le={le}");
                prev_le = le;
                prev = *v;
            }
        }
        assert_eq!(counts.len(), series.len());
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn prometheus_buckets_count_samples_at_or_below_le() {
        let s = IoStats::new();
        for ns in [1_500, 1_500, 40_000, 3_000_000] {
            s.on_submit(READ);
            s.on_complete(READ, ns, 0, 0, true);
        }
        let snap = StatsSnapshot {
            servers: vec![ServerStats {
                name: "s".into(),
                totals: IoSnapshot::from_raw(&s.raw_snapshot()),
                ..Default::default()
            }],
            files: vec![],
        };
        let samples = parse_exposition(&render_prometheus(&snap));
        let at = |le: &str| {
            samples
                .iter()
                .find(|s| s.name == "directnfs_latency_seconds_bucket" && s.labels["le"] == le)
                .map(|s| s.value)
                .expect("bucket")
        };
        assert_eq!(at("0.000001"), 0.0);
        assert_eq!(at("0.000002"), 2.0);
        assert_eq!(at("0.00002"), 2.0);
        assert_eq!(at("0.00005"), 3.0);
        assert_eq!(at("0.005"), 4.0);
        assert_eq!(at("100"), 4.0);
        assert_eq!(at("+Inf"), 4.0);
        let sum = samples
            .iter()
            .find(|s| s.name == "directnfs_latency_seconds_sum")
            .expect("sum");
        assert!((sum.value - 0.003043).abs() < 1e-12);
    }

    #[test]
    fn prometheus_escapes_label_values() {
        let nasty = "fil\"er\\1\nx";
        let snap = StatsSnapshot {
            servers: vec![ServerStats {
                name: nasty.into(),
                ..Default::default()
            }],
            files: vec![],
        };
        let text = render_prometheus(&snap);
        assert!(text.contains(r#"server="fil\"er\\1\nx""#), "{text}");
        let samples = parse_exposition(&text);
        assert!(samples.iter().all(|s| s.labels["server"] == nasty));
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn prometheus_up_reflects_path_and_channel_state() {
        let samples = parse_exposition(&render_prometheus(&sample_snapshot()));
        let up: Vec<(String, String, f64)> = samples
            .iter()
            .filter(|s| s.name == "directnfs_up")
            .map(|s| (s.labels["level"].clone(), s.labels["path"].clone(), s.value))
            .collect();
        assert!(up.contains(&("path".into(), "10.231.1.2".into(), 1.0)));
        assert!(up.contains(&("path".into(), "10.231.2.2".into(), 0.0)));
        assert!(up.contains(&("channel".into(), "10.231.2.2".into(), 0.0)));
        assert_eq!(up.len(), 5);
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn socket_buffers_are_shown_per_channel() {
        let samples = parse_exposition(&render_prometheus(&sample_snapshot()));
        let bufs: Vec<(String, String, f64)> = samples
            .iter()
            .filter(|s| s.name == "directnfs_socket_buffer_bytes")
            .map(|s| {
                (
                    s.labels["channel"].clone(),
                    s.labels["direction"].clone(),
                    s.value,
                )
            })
            .collect();
        assert_eq!(bufs.len(), 6, "send and receive of 3 channels: {bufs:?}");
        assert!(bufs.contains(&("0".into(), "send".into(), 8388608.0)));
        assert!(bufs.contains(&("1".into(), "receive".into(), 131072.0)));
        assert!(bufs.contains(&("2".into(), "send".into(), 0.0)));
        let text = render_text(&sample_snapshot());
        let channels = section(&text, "CHANNELS (v$dnfs_channels)");
        assert!(channels[0].contains("sndbuf") && channels[0].contains("rcvbuf"));
        let cells: Vec<&str> = channels[2].split_whitespace().collect();
        assert_eq!(
            cells[cells.len() - 2..],
            ["87040", "131072"],
            "{channels:?}"
        );
    }

    #[test]
    fn prometheus_of_an_empty_snapshot_is_only_comments() {
        let text = render_prometheus(&StatsSnapshot::default());
        assert!(text.lines().all(|l| l.starts_with("# ")));
        assert!(parse_exposition(&text).is_empty());
    }

    #[test]
    fn seconds_are_rendered_as_exact_decimals() {
        assert_eq!(seconds_from_ns(1_000), "0.000001");
        assert_eq!(seconds_from_ns(500_000_000), "0.5");
        assert_eq!(seconds_from_ns(100_000_000_000), "100");
        assert_eq!(seconds_from_ns(1_500_000_000), "1.5");
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn json_is_pretty_and_round_trips() {
        let snap = sample_snapshot();
        let json = render_json(&snap).expect("json");
        assert!(json.contains("\n  \"servers\": ["));
        let back: StatsSnapshot = serde_json::from_str(&json).expect("parse");
        assert_eq!(back, snap);
        let v: serde_json::Value = serde_json::from_str(&json).expect("value");
        let read = &v["servers"][0]["totals"]["latency_us"]["read"];
        for k in [
            "count", "mean", "p50", "p90", "p99", "p999", "max", "buckets",
        ] {
            assert!(!read[k].is_null(), "{k}");
        }
        assert!(read["buckets"][0].as_array().is_some_and(|b| b.len() == 2));
    }

    /// The lines of one titled section of the text output.
    fn section<'a>(text: &'a str, title: &str) -> Vec<&'a str> {
        let mut lines = text.lines().skip_while(|l| *l != title);
        assert_eq!(lines.next(), Some(title), "section {title}");
        lines.take_while(|l| !l.is_empty()).collect()
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn text_has_a_section_per_level_with_aligned_columns() {
        let text = render_text(&sample_snapshot());
        for title in [
            "SERVERS (v$dnfs_servers)",
            "PATHS",
            "CHANNELS (v$dnfs_channels)",
            "FILES (v$dnfs_files)",
            "LATENCY (µs)",
            "CALLS BY PROCEDURE (v$dnfs_stats)",
        ] {
            let lines = section(&text, title);
            assert!(lines.len() >= 2, "{title}: header and rows");
            // The last column is right-aligned, so every line has one length.
            let len = lines[0].chars().count();
            for l in &lines {
                assert_eq!(l.chars().count(), len, "{title}: {l:?}");
            }
        }
        let paths = section(&text, "PATHS");
        assert!(paths[0].starts_with("server"));
        assert!(paths[1].contains("10.231.1.1") && paths[1].contains(" up "));
        assert!(paths[2].contains(" * ") && paths[2].contains(" down "));
        let channels = section(&text, "CHANNELS (v$dnfs_channels)");
        assert_eq!(channels.len(), 4);
        assert!(channels[0].contains("sends") && channels[0].contains("moved_other"));
        assert!(
            channels[1].contains("8388608") && channels[2].contains("87040"),
            "{channels:?}"
        );
        assert!(channels[3].contains("probing"));
        let servers = section(&text, "SERVERS (v$dnfs_servers)");
        assert!(servers[1].contains("/vol/oradata") && servers[1].contains("1048576"));
        let files = section(&text, "FILES (v$dnfs_files)");
        assert!(files[1].contains("8.0 MiB"));
    }

    #[test]
    fn text_latency_is_in_microseconds() {
        let s = IoStats::new();
        s.on_submit(READ);
        s.on_complete(READ, 250_000, 8192, 0, true);
        let snap = StatsSnapshot {
            servers: vec![],
            files: vec![FileStats {
                path: "/f".into(),
                server: "s".into(),
                totals: IoSnapshot::from_raw(&s.raw_snapshot()),
                ..FileStats::default()
            }],
        };
        let text = render_text(&snap);
        let lat = section(&text, "LATENCY (µs)");
        assert!(lat[0].contains("p99.9"));
        assert!(lat[1].starts_with("file") && lat[1].contains("read") && lat[1].contains("250.0"));
        let files = section(&text, "FILES (v$dnfs_files)");
        assert!(files[1].contains("8.0 KiB"));
    }

    #[test]
    fn text_of_an_empty_snapshot_says_so() {
        assert_eq!(render_text(&StatsSnapshot::default()), "no statistics\n");
    }

    #[test]
    fn bytes_are_humanized() {
        assert_eq!(fmt_bytes(0), "0 B");
        assert_eq!(fmt_bytes(1023), "1023 B");
        assert_eq!(fmt_bytes(8192), "8.0 KiB");
        assert_eq!(fmt_bytes(3 << 30), "3.0 GiB");
    }

    #[test]
    fn format_parses_from_its_names() {
        assert_eq!("text".parse(), Ok(StatsFormat::Text));
        assert_eq!("JSON".parse(), Ok(StatsFormat::Json));
        assert_eq!("prom".parse(), Ok(StatsFormat::Prometheus));
        assert!("xml".parse::<StatsFormat>().is_err());
    }

    fn host() -> HostStats {
        let proc_ = |pid: u32| ProcessStats {
            pid,
            uid: 1000,
            program: "postgres".into(),
            stats: sample_snapshot(),
            alerts: vec![format!(
                "2026-11-24T10:00:00.000Z directnfs[{pid}] path down"
            )],
            ..ProcessStats::default()
        };
        HostStats {
            processes: vec![proc_(101), proc_(102)],
            unreadable: vec![(103, "permission denied".into())],
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn host_prometheus_has_one_family_each_and_a_pid_on_every_series() {
        let text = render_host_prometheus(&host());
        let samples = parse_exposition(&text);
        for s in &samples {
            assert!(s.labels.contains_key("pid"), "{s:?}");
        }
        let info: Vec<_> = samples
            .iter()
            .filter(|s| s.name == "directnfs_process_info")
            .map(|s| (s.labels["pid"].clone(), s.labels["program"].clone()))
            .collect();
        assert_eq!(
            info,
            [
                ("101".into(), "postgres".into()),
                ("102".into(), "postgres".into())
            ]
        );
        let reads: f64 = samples
            .iter()
            .filter(|s| {
                s.name == "directnfs_calls_total"
                    && s.labels["level"] == "server"
                    && s.labels["proc"] == "READ"
            })
            .map(|s| s.value)
            .sum();
        assert_eq!(reads, 2.0 * 401.0);
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn host_text_lists_processes_sums_servers_and_shows_alerts() {
        let text = render_host_text(&host());
        let procs = section(&text, "PROCESSES (2)");
        assert_eq!(procs.len(), 3);
        assert!(procs[1].starts_with("101") && procs[1].contains("postgres"));
        let servers = section(&text, "SERVERS (v$dnfs_servers)");
        assert_eq!(servers.len(), 2, "one server summed over both processes");
        assert!(servers[1].contains(" 2 "), "clients column: {}", servers[1]);
        let channels = section(&text, "CHANNELS (v$dnfs_channels)");
        assert!(channels[0].starts_with("pid"));
        assert_eq!(channels.len(), 1 + 2 * 3);
        let files = section(&text, "FILES (v$dnfs_files)");
        assert_eq!(files.len(), 3);
        assert!(files[1].contains("101") && files[2].contains("102"));
        assert!(section(&text, "RECENT ALERTS")[1].contains("path down"));
        assert!(section(&text, "UNREADABLE ENDPOINTS")[1].contains("permission denied"));
    }

    #[test]
    fn host_text_of_no_process_says_so() {
        let text = render_host_text(&HostStats::default());
        assert!(text.contains("no directnfs process"), "{text}");
    }
}
