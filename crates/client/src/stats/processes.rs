//! Statistics of whole processes: what one process publishes
//! ([`ProcessStats`]), and the host-wide view over several of them
//! ([`HostStats`]), summed the way `dnfs stats` shows it.

use serde::{Deserialize, Serialize};

use super::snapshot::{state, PathStats, ServerStats, StatsSnapshot};

/// Everything one process publishes: who it is, the statistics of every
/// client it has mounted, and its latest alert-log lines.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcessStats {
    /// Process id.
    pub pid: u32,
    /// Effective user id.
    pub uid: u32,
    /// Program name (`/proc/self/comm`).
    pub program: String,
    /// When the process began publishing (its first client), ms since the
    /// Unix epoch.
    pub started_unix_ms: u64,
    /// When this snapshot was taken, ms since the Unix epoch.
    pub taken_unix_ms: u64,
    /// Every live client of the process, servers and files together.
    pub stats: StatsSnapshot,
    /// The process's most recent alert-log lines, oldest first (bounded).
    pub alerts: Vec<String>,
}

/// The statistics of every directnfs process found on the host, and the
/// endpoints that could not be read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostStats {
    /// One entry per process that answered, by pid.
    pub processes: Vec<ProcessStats>,
    /// Endpoints found but not read: `(pid, why)` (permission, a process
    /// that ended while being asked, ...).
    pub unreadable: Vec<(u32, String)>,
}

impl HostStats {
    /// The processes' statistics summed into one snapshot: servers that
    /// name the same server, export and protocol version add up (their paths too, by local
    /// and remote address), while channels and files stay one entry per
    /// process, with their `pid` set. A path down in some processes and up
    /// in others is [`state::PARTLY_DOWN`].
    pub fn aggregate(&self) -> StatsSnapshot {
        let mut out = StatsSnapshot::default();
        for p in &self.processes {
            for srv in &p.stats.servers {
                let mine = match out.servers.iter_mut().find(|s| {
                    s.name == srv.name && s.export == srv.export && s.nfs_version == srv.nfs_version
                }) {
                    Some(s) => s,
                    None => {
                        out.servers.push(ServerStats {
                            name: srv.name.clone(),
                            export: srv.export.clone(),
                            nfs_version: srv.nfs_version.clone(),
                            rtmax: srv.rtmax,
                            wtmax: srv.wtmax,
                            ..ServerStats::default()
                        });
                        let last = out.servers.len() - 1;
                        &mut out.servers[last]
                    }
                };
                add_server(mine, srv, p.pid);
            }
            for f in &p.stats.files {
                let mut f = f.clone();
                f.pid = Some(p.pid);
                out.files.push(f);
            }
        }
        out
    }
}

fn add_server(mine: &mut ServerStats, srv: &ServerStats, pid: u32) {
    mine.clients += srv.clients.max(1);
    mine.totals.merge(&srv.totals);
    for (class, io) in &srv.io_classes {
        mine.io_classes.entry(class.clone()).or_default().merge(io);
    }
    for a in &srv.addresses {
        if !mine.addresses.contains(a) {
            mine.addresses.push(a.clone());
        }
    }
    for path in &srv.paths {
        let existing = mine
            .paths
            .iter_mut()
            .find(|q| q.local == path.local && q.remote == path.remote);
        let target = match existing {
            Some(q) => {
                q.totals.merge(&path.totals);
                if q.state != path.state {
                    q.state = state::PARTLY_DOWN.to_owned();
                }
                q
            }
            None => {
                mine.paths.push(PathStats {
                    channels: Vec::new(),
                    ..path.clone()
                });
                let last = mine.paths.len() - 1;
                &mut mine.paths[last]
            }
        };
        for c in &path.channels {
            let mut c = c.clone();
            c.pid = Some(pid);
            target.channels.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{ChannelStats, FileStats, IoSnapshot};

    fn io(reads: u64) -> IoSnapshot {
        let mut io = IoSnapshot {
            reads,
            sends: reads,
            receives: reads,
            bytes_read: reads * 8192,
            ..IoSnapshot::default()
        };
        io.calls_by_proc.insert("READ".into(), reads);
        io
    }

    fn process(pid: u32, reads: u64, path_state: &str) -> ProcessStats {
        ProcessStats {
            pid,
            stats: StatsSnapshot {
                servers: vec![ServerStats {
                    name: "filer1".into(),
                    export: "/vol/data".into(),
                    clients: 1,
                    addresses: vec!["10.231.1.2".into()],
                    totals: io(reads),
                    paths: vec![PathStats {
                        local: None,
                        remote: "10.231.1.2".into(),
                        state: path_state.into(),
                        totals: io(reads),
                        channels: vec![ChannelStats {
                            id: 0,
                            state: path_state.into(),
                            totals: io(reads),
                            ..ChannelStats::default()
                        }],
                    }],
                    io_classes: [("bulk".to_owned(), io(reads))].into_iter().collect(),
                    ..ServerStats::default()
                }],
                files: vec![FileStats {
                    path: "/db/f".into(),
                    server: "filer1".into(),
                    totals: io(reads),
                    ..FileStats::default()
                }],
            },
            ..ProcessStats::default()
        }
    }

    #[test]
    fn aggregate_sums_servers_and_paths_and_keeps_channels_and_files_per_process() {
        let host = HostStats {
            processes: vec![process(10, 5, "up"), process(11, 7, "up")],
            unreadable: vec![],
        };
        let agg = host.aggregate();
        assert_eq!(agg.servers.len(), 1);
        let s = &agg.servers[0];
        assert_eq!((s.clients, s.totals.reads, s.totals.calls()), (2, 12, 12));
        assert_eq!(s.paths.len(), 1);
        assert_eq!(s.paths[0].totals.bytes_read, 12 * 8192);
        assert_eq!(s.io_classes.len(), 1);
        assert_eq!(
            (s.io_classes["bulk"].reads, s.io_classes["bulk"].bytes_read),
            (12, 12 * 8192)
        );
        let pids: Vec<_> = s.paths[0].channels.iter().map(|c| c.pid).collect();
        assert_eq!(pids, [Some(10), Some(11)]);
        let files: Vec<_> = agg.files.iter().map(|f| (f.pid, f.totals.reads)).collect();
        assert_eq!(files, [(Some(10), 5), (Some(11), 7)]);
    }

    #[test]
    fn a_path_down_in_some_processes_is_partly_down() {
        let host = HostStats {
            processes: vec![process(10, 1, "up"), process(11, 1, "down")],
            unreadable: vec![],
        };
        assert_eq!(
            host.aggregate().servers[0].paths[0].state,
            state::PARTLY_DOWN
        );
        let all_down = HostStats {
            processes: vec![process(10, 1, "down"), process(11, 1, "down")],
            unreadable: vec![],
        };
        assert_eq!(all_down.aggregate().servers[0].paths[0].state, state::DOWN);
    }

    #[test]
    fn different_exports_of_one_server_stay_apart() {
        let mut b = process(11, 1, "up");
        b.stats.servers[0].export = "/vol/redo".into();
        let host = HostStats {
            processes: vec![process(10, 1, "up"), b],
            unreadable: vec![],
        };
        assert_eq!(host.aggregate().servers.len(), 2);
    }

    #[test]
    fn an_export_mounted_over_nfsv3_and_nfsv41_stays_two_entries() {
        let mut a = process(10, 1, "up");
        a.stats.servers[0].nfs_version = "3".into();
        let mut b = process(11, 2, "up");
        b.stats.servers[0].nfs_version = "4.1".into();
        let host = HostStats {
            processes: vec![a, b],
            unreadable: vec![],
        };
        let agg = host.aggregate();
        let versions: Vec<_> = agg
            .servers
            .iter()
            .map(|s| (s.nfs_version.as_str(), s.totals.reads))
            .collect();
        assert_eq!(versions, [("3", 1), ("4.1", 2)]);
    }
}
