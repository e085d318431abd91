//! Rates between two readings of the host's statistics: what `dnfs stats
//! --watch` and `dnfs top` show (IOPS, MB/s, latency over the interval).
//!
//! Counters are matched by process and scope (server and export; path;
//! channel; file). A process or scope first seen in the later reading has
//! no rate yet (its counters since it started are not one interval's).

use std::collections::BTreeMap;

use directnfs::stats::{FileStats, HostStats, IoSnapshot, LatencySummary, ServerStats};
use serde::Serialize;

/// Rates of every scope over one interval.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Rates {
    /// Seconds between the two readings.
    pub interval_s: f64,
    /// Processes in the later reading.
    pub processes: usize,
    /// Per server and export, summed over processes.
    pub servers: Vec<ScopeRate>,
    /// Per server, export and I/O class (`filer1:/vol log`), summed over
    /// processes: the reads and writes of that class's files as their
    /// callers saw them (`ServerStats::io_classes`).
    pub io_classes: Vec<ScopeRate>,
    /// Per path (server, local, remote), summed over processes.
    pub paths: Vec<ScopeRate>,
    /// Per channel of each process.
    pub channels: Vec<ScopeRate>,
    /// Per file of each process, busiest first.
    pub files: Vec<ScopeRate>,
}

/// One scope's rates.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ScopeRate {
    /// What it is: `filer1:/vol/data`, `filer1 *->10.0.0.2:2049`, a file path.
    pub name: String,
    /// The process (channels and files).
    pub pid: Option<u32>,
    /// `up`, `down`, `partly down` (paths and channels).
    pub state: Option<String>,
    /// READs per second.
    pub reads_per_s: f64,
    /// WRITEs per second.
    pub writes_per_s: f64,
    /// Other calls per second.
    pub other_per_s: f64,
    /// MB (10^6 bytes) read per second.
    pub read_mb_per_s: f64,
    /// MB written per second.
    pub write_mb_per_s: f64,
    /// Errors per second.
    pub errors_per_s: f64,
    /// Retransmissions per second.
    pub retransmits_per_s: f64,
    /// READ latency over the interval, ms (mean, p99).
    pub read_ms: Option<(f64, f64)>,
    /// WRITE latency over the interval, ms (mean, p99).
    pub write_ms: Option<(f64, f64)>,
    /// Calls in flight at the later reading.
    pub inflight: u64,
}

impl ScopeRate {
    /// Reads and writes per second.
    pub fn iops(&self) -> f64 {
        self.reads_per_s + self.writes_per_s
    }
}

/// Counter differences of one scope (summable across processes).
#[derive(Debug, Clone, Default)]
struct Delta {
    reads: u64,
    writes: u64,
    calls: u64,
    bytes_read: u64,
    bytes_written: u64,
    errors: u64,
    retransmits: u64,
    read: LatDelta,
    write: LatDelta,
    inflight: u64,
    state: Option<String>,
}

/// Latency samples of the interval: count, sum and per-bucket counts
/// keyed by the bucket's upper bound (µs, as bits so it orders).
#[derive(Debug, Clone, Default)]
struct LatDelta {
    count: u64,
    sum_us: f64,
    buckets: BTreeMap<u64, u64>,
}

impl LatDelta {
    fn between(cur: Option<&LatencySummary>, prev: Option<&LatencySummary>) -> Self {
        let Some(cur) = cur else {
            return LatDelta::default();
        };
        let mut buckets: BTreeMap<u64, u64> =
            cur.buckets.iter().map(|&(u, n)| (u.to_bits(), n)).collect();
        let (mut count, mut sum_us) = (cur.count, cur.sum_us);
        if let Some(prev) = prev {
            count = count.saturating_sub(prev.count);
            sum_us = (sum_us - prev.sum_us).max(0.0);
            for &(u, n) in &prev.buckets {
                if let Some(c) = buckets.get_mut(&u.to_bits()) {
                    *c = c.saturating_sub(n);
                }
            }
        }
        LatDelta {
            count,
            sum_us,
            buckets,
        }
    }

    fn add(&mut self, o: &LatDelta) {
        self.count += o.count;
        self.sum_us += o.sum_us;
        for (u, n) in &o.buckets {
            *self.buckets.entry(*u).or_default() += n;
        }
    }

    /// (mean, p99) in ms; p99 is the upper bound of the bucket holding the
    /// 99th-percentile sample (at most ~6% above it).
    fn ms(&self) -> Option<(f64, f64)> {
        if self.count == 0 {
            return None;
        }
        let mean = self.sum_us / self.count as f64 / 1000.0;
        let rank = (self.count as f64 * 0.99).ceil() as u64;
        let mut seen = 0;
        let mut p99 = 0.0;
        // Keys are f64 bits of positive numbers: their order is numeric.
        for (u, n) in &self.buckets {
            seen += n;
            if seen >= rank {
                p99 = f64::from_bits(*u) / 1000.0;
                break;
            }
        }
        Some((mean, p99))
    }
}

impl Delta {
    fn between(cur: &IoSnapshot, prev: &IoSnapshot) -> Self {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        Delta {
            reads: d(cur.reads, prev.reads),
            writes: d(cur.writes, prev.writes),
            calls: d(cur.calls(), prev.calls()),
            bytes_read: d(cur.bytes_read, prev.bytes_read),
            bytes_written: d(cur.bytes_written, prev.bytes_written),
            errors: d(cur.errors, prev.errors),
            retransmits: d(cur.retransmits, prev.retransmits),
            read: LatDelta::between(cur.latency_us.get("read"), prev.latency_us.get("read")),
            write: LatDelta::between(cur.latency_us.get("write"), prev.latency_us.get("write")),
            inflight: cur.inflight,
            state: None,
        }
    }

    /// A scope with no earlier reading: no rate, only what is current.
    fn first(cur: &IoSnapshot) -> Self {
        Delta {
            inflight: cur.inflight,
            ..Delta::default()
        }
    }

    fn add(&mut self, o: &Delta) {
        self.reads += o.reads;
        self.writes += o.writes;
        self.calls += o.calls;
        self.bytes_read += o.bytes_read;
        self.bytes_written += o.bytes_written;
        self.errors += o.errors;
        self.retransmits += o.retransmits;
        self.read.add(&o.read);
        self.write.add(&o.write);
        self.inflight += o.inflight;
        self.state = match (self.state.take(), &o.state) {
            (None, s) => s.clone(),
            (Some(a), Some(b)) if a != *b => Some(directnfs::stats::state::PARTLY_DOWN.into()),
            (a, _) => a,
        };
    }

    fn rate(&self, name: String, pid: Option<u32>, secs: f64) -> ScopeRate {
        let per = |v: u64| v as f64 / secs;
        ScopeRate {
            name,
            pid,
            state: self.state.clone(),
            reads_per_s: per(self.reads),
            writes_per_s: per(self.writes),
            other_per_s: per(self.calls.saturating_sub(self.reads + self.writes)),
            read_mb_per_s: per(self.bytes_read) / 1e6,
            write_mb_per_s: per(self.bytes_written) / 1e6,
            errors_per_s: per(self.errors),
            retransmits_per_s: per(self.retransmits),
            read_ms: self.read.ms(),
            write_ms: self.write.ms(),
            inflight: self.inflight,
        }
    }
}

/// The record of `earlier` that matches the one following `before` in the
/// current reading: the n-th record alike (by `same`) in both, where n is
/// how many alike records `before` holds. Several clients of one process
/// may list the same server or file; each must be compared with its own
/// earlier record, not the first of its kind.
fn nth_alike<'a, T>(before: &[T], earlier: &'a [T], same: impl Fn(&&T) -> bool) -> Option<&'a T> {
    let n = before.iter().filter(|t| same(t)).count();
    earlier.iter().filter(|t| same(t)).nth(n)
}

/// The rates between `prev` and `cur`, taken `secs` apart.
pub fn between(prev: &HostStats, cur: &HostStats, secs: f64) -> Rates {
    let secs = secs.max(1e-3);
    let mut servers: BTreeMap<String, Delta> = BTreeMap::new();
    let mut classes: BTreeMap<String, Delta> = BTreeMap::new();
    let mut paths: BTreeMap<String, Delta> = BTreeMap::new();
    let mut channels = Vec::new();
    let mut files = Vec::new();
    for p in &cur.processes {
        let before = prev.processes.iter().find(|q| q.pid == p.pid);
        for (i, srv) in p.stats.servers.iter().enumerate() {
            let key = format!("{}:{}", srv.name, srv.export);
            // A process with several clients of one server lists it once
            // per client, in a stable order: the n-th is compared with the
            // n-th of the earlier reading.
            let same = |s: &&ServerStats| s.name == srv.name && s.export == srv.export;
            let old = before.and_then(|b| nth_alike(&p.stats.servers[..i], &b.stats.servers, same));
            let delta = |cur: &IoSnapshot, old: Option<&IoSnapshot>| match old {
                Some(o) => Delta::between(cur, o),
                None => Delta::first(cur),
            };
            servers
                .entry(key.clone())
                .or_default()
                .add(&delta(&srv.totals, old.map(|o| &o.totals)));
            for (class, io) in &srv.io_classes {
                let old_class = old.and_then(|o| o.io_classes.get(class));
                classes
                    .entry(format!("{key} {class}"))
                    .or_default()
                    .add(&delta(io, old_class));
            }
            for path in &srv.paths {
                let local = path.local.as_deref().unwrap_or("*");
                let key = format!("{} {local}->{}", srv.name, path.remote);
                let old_path = old.and_then(|o| {
                    o.paths
                        .iter()
                        .find(|q| q.local == path.local && q.remote == path.remote)
                });
                let mut d = delta(&path.totals, old_path.map(|o| &o.totals));
                d.state = Some(path.state.clone());
                paths.entry(key.clone()).or_default().add(&d);
                for c in &path.channels {
                    let old_c = old_path.and_then(|o| o.channels.iter().find(|x| x.id == c.id));
                    let mut d = delta(&c.totals, old_c.map(|o| &o.totals));
                    d.state = Some(c.state.clone());
                    channels.push(d.rate(format!("{key} #{}", c.id), Some(p.pid), secs));
                }
            }
        }
        for (i, f) in p.stats.files.iter().enumerate() {
            let same = |x: &&FileStats| x.path == f.path;
            let old = before.and_then(|b| nth_alike(&p.stats.files[..i], &b.stats.files, same));
            let d = match old {
                Some(o) => Delta::between(&f.totals, &o.totals),
                None => Delta::first(&f.totals),
            };
            files.push(d.rate(f.path.clone(), Some(p.pid), secs));
        }
    }
    files.sort_by(|a, b| {
        let key = |r: &ScopeRate| r.iops() + r.read_mb_per_s + r.write_mb_per_s;
        key(b).total_cmp(&key(a))
    });
    Rates {
        interval_s: secs,
        processes: cur.processes.len(),
        servers: servers
            .into_iter()
            .map(|(k, d)| d.rate(k, None, secs))
            .collect(),
        io_classes: classes
            .into_iter()
            .map(|(k, d)| d.rate(k, None, secs))
            .collect(),
        paths: paths
            .into_iter()
            .map(|(k, d)| d.rate(k, None, secs))
            .collect(),
        channels,
        files,
    }
}

/// Text tables of the rates, `iostat -x` style: one table each for
/// servers, their I/O classes, paths and the `top_files` busiest files
/// (channels too when `channels`). Latency in ms.
pub fn render(r: &Rates, top_files: usize, channels: bool) -> String {
    let mut out = String::new();
    let header =
        |first: &str| {
            format!(
            "{first:<40} {:>6} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6} {:>7} {:>7}",
            "pid", "r/s", "w/s", "rMB/s", "wMB/s", "r_await", "r_p99", "w_await", "w_p99",
            "inflt", "err/s", "retr/s"
        )
        };
    let row = |s: &ScopeRate| {
        let ms = |v: Option<(f64, f64)>, i: usize| {
            v.map_or_else(|| "-".to_owned(), |(m, p)| format!("{:.2}", [m, p][i]))
        };
        let mut name = s.name.clone();
        if let Some(st) = &s.state {
            name = format!("{name} [{st}]");
        }
        format!(
            "{:<40} {:>6} {:>9.1} {:>9.1} {:>8.2} {:>8.2} {:>8} {:>8} {:>8} {:>8} {:>6} {:>7.1} {:>7.1}",
            truncate(&name, 40),
            s.pid.map_or_else(|| "-".to_owned(), |p| p.to_string()),
            s.reads_per_s,
            s.writes_per_s,
            s.read_mb_per_s,
            s.write_mb_per_s,
            ms(s.read_ms, 0),
            ms(s.read_ms, 1),
            ms(s.write_ms, 0),
            ms(s.write_ms, 1),
            s.inflight,
            s.errors_per_s,
            s.retransmits_per_s,
        )
    };
    let mut table = |title: &str, rows: &[ScopeRate]| {
        if rows.is_empty() {
            return;
        }
        out.push_str(&header(title));
        out.push('\n');
        for s in rows {
            out.push_str(row(s).trim_end());
            out.push('\n');
        }
        out.push('\n');
    };
    table("SERVER", &r.servers);
    table("IO CLASS", &r.io_classes);
    table("PATH", &r.paths);
    if channels {
        table("CHANNEL", &r.channels);
    }
    let busiest: Vec<ScopeRate> = r.files.iter().take(top_files).cloned().collect();
    table("FILE (busiest)", &busiest);
    if out.is_empty() {
        out.push_str("no directnfs process publishes statistics on this host\n");
    }
    out
}

/// At most `n` characters, the end kept (paths differ at their end).
fn truncate(s: &str, n: usize) -> String {
    let count = s.chars().count();
    if count <= n {
        return s.to_owned();
    }
    let tail: String = s.chars().skip(count - (n - 1)).collect();
    format!("…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use directnfs::stats::{PathStats, ProcessStats, StatsSnapshot};

    fn io(reads: u64, lat_sum_us: f64, buckets: Vec<(f64, u64)>) -> IoSnapshot {
        let mut io = IoSnapshot {
            reads,
            bytes_read: reads * 8192,
            ..IoSnapshot::default()
        };
        io.calls_by_proc.insert("READ".into(), reads);
        io.latency_us.insert(
            "read".into(),
            LatencySummary {
                count: reads,
                sum_us: lat_sum_us,
                buckets,
                ..LatencySummary::default()
            },
        );
        io
    }

    fn host(pid: u32, io: IoSnapshot) -> HostStats {
        HostStats {
            processes: vec![ProcessStats {
                pid,
                stats: StatsSnapshot {
                    servers: vec![ServerStats {
                        name: "f".into(),
                        export: "/e".into(),
                        totals: io.clone(),
                        paths: vec![PathStats {
                            remote: "r".into(),
                            state: "up".into(),
                            totals: io,
                            ..PathStats::default()
                        }],
                        ..ServerStats::default()
                    }],
                    files: vec![],
                },
                ..ProcessStats::default()
            }],
            unreadable: vec![],
        }
    }

    #[test]
    fn rates_are_deltas_over_the_interval_with_interval_latency() {
        let a = host(1, io(100, 10_000.0, vec![(100.0, 100)]));
        let b = host(
            1,
            io(
                300,
                10_000.0 + 200.0 * 500.0,
                vec![(100.0, 100), (520.0, 200)],
            ),
        );
        let r = between(&a, &b, 2.0);
        let s = &r.servers[0];
        assert_eq!(s.name, "f:/e");
        assert_eq!(s.reads_per_s, 100.0);
        assert!((s.read_mb_per_s - 200.0 * 8192.0 / 2.0 / 1e6).abs() < 1e-9);
        let (mean, p99) = s.read_ms.expect("latency");
        assert!((mean - 0.5).abs() < 1e-9, "{mean}");
        assert!((p99 - 0.52).abs() < 1e-9, "{p99}");
        assert_eq!(r.paths[0].state.as_deref(), Some("up"));
    }

    /// One process, two clients of the same server with the same file open
    /// (as `dnfs bench` sessions): each record is compared with its own.
    fn two_clients(a: IoSnapshot, b: IoSnapshot) -> HostStats {
        let mut h = host(7, a.clone());
        let other = host(7, b.clone()).processes[0].stats.servers[0].clone();
        let stats = &mut h.processes[0].stats;
        stats.servers.push(other);
        for io in [a, b] {
            stats.files.push(FileStats {
                path: "/db.dat".into(),
                totals: io,
                ..FileStats::default()
            });
        }
        h
    }

    #[test]
    fn two_clients_of_one_server_in_one_process_are_each_compared_with_their_own() {
        // Client A is slow (1 ms reads), client B fast (0.1 ms); each
        // makes 100 reads in the interval.
        let prev = two_clients(
            io(1000, 1000.0 * 1000.0, vec![(1024.0, 1000)]),
            io(5000, 5000.0 * 100.0, vec![(102.4, 5000)]),
        );
        let cur = two_clients(
            io(1100, 1100.0 * 1000.0, vec![(1024.0, 1100)]),
            io(5100, 5100.0 * 100.0, vec![(102.4, 5100)]),
        );
        let r = between(&prev, &cur, 1.0);
        assert_eq!(r.servers.len(), 1);
        let s = &r.servers[0];
        assert_eq!(s.reads_per_s, 200.0);
        let (mean, p99) = s.read_ms.expect("latency");
        assert!((mean - 0.55).abs() < 1e-9, "{mean}");
        assert!((p99 - 1.024).abs() < 1e-9, "{p99}");
        let files: Vec<_> = r
            .files
            .iter()
            .map(|f| f.read_ms.expect("latency"))
            .collect();
        assert_eq!(files.len(), 2);
        for (mean, p99) in files {
            assert!(p99 >= mean, "p99 {p99} below mean {mean}");
            assert!(
                (mean - 1.0).abs() < 1e-9 || (mean - 0.1).abs() < 1e-9,
                "{mean}"
            );
        }
    }

    #[test]
    fn a_process_seen_for_the_first_time_has_no_rate_yet() {
        let a = HostStats::default();
        let b = host(7, io(1_000_000, 1.0, vec![(1.0, 1_000_000)]));
        let r = between(&a, &b, 1.0);
        assert_eq!(r.servers[0].reads_per_s, 0.0);
        assert!(r.servers[0].read_ms.is_none());
    }

    #[test]
    fn each_io_class_has_its_rates_and_p99_over_the_interval() {
        let with_classes = |log: IoSnapshot, bulk: IoSnapshot| {
            let mut h = host(3, io(0, 0.0, vec![]));
            let srv = &mut h.processes[0].stats.servers[0];
            srv.io_classes.insert("log".into(), log);
            srv.io_classes.insert("bulk".into(), bulk);
            h
        };
        // Log: 100 reads in the interval, 99 at 0.1 ms and 1 at 25 ms;
        // bulk: 10 reads at 4 ms.
        let a = with_classes(
            io(10, 1_000.0, vec![(102.4, 10)]),
            io(5, 20_000.0, vec![(4096.0, 5)]),
        );
        let b = with_classes(
            io(
                110,
                1_000.0 + 99.0 * 100.0 + 25_000.0,
                vec![(102.4, 109), (25_600.0, 1)],
            ),
            io(15, 60_000.0, vec![(4096.0, 15)]),
        );
        let r = between(&a, &b, 1.0);
        let names: Vec<&str> = r.io_classes.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["f:/e bulk", "f:/e log"]);
        let log = &r.io_classes[1];
        assert_eq!(log.reads_per_s, 100.0);
        let (_, p99) = log.read_ms.expect("log latency");
        assert!((p99 - 0.1024).abs() < 1e-9, "{p99}");
        let (mean, p99) = r.io_classes[0].read_ms.expect("bulk latency");
        assert!((mean - 4.0).abs() < 1e-9 && (p99 - 4.096).abs() < 1e-9);
        let text = render(&r, 10, false);
        assert!(text.contains("IO CLASS"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.starts_with("f:/e log") && l.contains("0.10")),
            "{text}"
        );
    }

    #[test]
    fn text_has_a_row_per_server_and_path() {
        let a = host(1, io(0, 0.0, vec![]));
        let b = host(1, io(50, 5_000.0, vec![(100.0, 50)]));
        let text = render(&between(&a, &b, 1.0), 10, false);
        assert!(text.contains("SERVER"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.starts_with("f:/e") && l.contains("50.0")),
            "{text}"
        );
        assert!(text.lines().any(|l| l.starts_with("f *->r [up]")), "{text}");
    }
}
