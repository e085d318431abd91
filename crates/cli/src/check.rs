//! `dnfs check`: for every server, path and export of the dnfstab (or each
//! URL given), connect over that path alone (binding its `local:` address),
//! MOUNT, FSINFO, and time NULL round trips. Prints one row per
//! (server, path, export), with the socket buffers the kernel gave the
//! connection (SO_SNDBUF/SO_RCVBUF after connect: a `sockbuf` request as
//! capped by `net.core.wmem_max`/`rmem_max`, or the autotuned size so far);
//! exits non-zero if any row failed. Each row shows the protocol and the
//! security flavor (`sec=`: under Kerberos the NULL round trips are sealed
//! calls on the mount's contexts); on NFSv4.1 also the session's slots, and the server owner (`so_major_id`) and
//! scope the path's EXCHANGE_ID reported (quoted when printable, else
//! hex); paths of one server that report different owners or scopes are
//! named below the table and fail the check, since a client would not
//! use them (session trunking, RFC 8881 §2.10.5).
//!
//! A check reports what works now: an unreachable server is waited for at
//! most [`CHECK_MNT_TIMEOUT`] per row, not the configured `mnt_timeout`
//! (600 s by default, meant for a database waiting out a takeover).

use std::path::Path;
use std::time::Duration;

use directnfs::config::{find_config, NfsUrl};
use directnfs::{printable, Client, Target};

use crate::error::{CliError, Result};

/// NULL calls per path; the median is reported.
const PINGS: usize = 5;

/// Longest wait for an unreachable server, per row (a smaller configured
/// `mnt_timeout` is kept).
const CHECK_MNT_TIMEOUT: Duration = Duration::from_secs(5);

/// One row of the report.
struct Row {
    server: String,
    path: String,
    export: String,
    outcome: std::result::Result<Probe, String>,
}

struct Probe {
    rtmax: u32,
    wtmax: u32,
    rtt: Duration,
    /// SO_SNDBUF and SO_RCVBUF of the connection, bytes.
    buffers: (u64, u64),
    /// `nfsv3` or `nfsv4.1`.
    proto: &'static str,
    /// The security flavor (`sys`, `krb5`, `krb5i`, `krb5p`).
    sec: &'static str,
    /// The NFSv4.1 session's slots (none on NFSv3).
    slots: Option<u32>,
    /// NFSv4.1: the server owner's major id and the server scope this
    /// path's EXCHANGE_ID reported (none on NFSv3).
    owner: Option<(Vec<u8>, Vec<u8>)>,
}

/// Runs the check; `urls` empty means "everything in the dnfstab".
pub fn run(config: Option<&Path>, urls: &[String]) -> Result<bool> {
    let mut targets: Vec<(String, String, Target)> = Vec::new();
    if urls.is_empty() {
        let tab = find_config(config)?.ok_or_else(|| {
            CliError::msg(
                "no dnfstab found (--config FILE, $DIRECTNFS_TAB, ./dnfstab, /etc/dnfstab); \
                 or give nfs:// URLs to check",
            )
        })?;
        for server in &tab.servers {
            let specs = tab.path_specs(server)?;
            for (p, spec) in server.paths.iter().zip(specs) {
                let shown = match &p.local {
                    Some(l) => format!("{l} -> {}", p.server),
                    None => p.server.clone(),
                };
                for e in &server.exports {
                    let mut options = server.options.clone();
                    // One channel is enough to prove a path; keep it quick.
                    options.connections = 1;
                    options.mnt_timeout = options.mnt_timeout.min(CHECK_MNT_TIMEOUT);
                    targets.push((
                        server.name.clone(),
                        shown.clone(),
                        Target {
                            name: server.name.clone(),
                            paths: vec![spec.clone()],
                            export: Some(e.export.clone()),
                            path: e.export.clone(),
                            options,
                        },
                    ));
                }
            }
        }
        if targets.is_empty() {
            return Err(nothing_to_serve(&tab));
        }
    } else {
        for u in urls {
            let url = NfsUrl::parse(u).map_err(|e| CliError::msg(e.to_string()))?;
            let mut target = Target::from_url(&url);
            target.options.connections = 1;
            target.options.mnt_timeout = target.options.mnt_timeout.min(CHECK_MNT_TIMEOUT);
            targets.push((url.host.clone(), url.host.clone(), target));
        }
    }
    let rows: Vec<Row> = targets
        .into_iter()
        .map(|(server, path, target)| Row {
            server,
            path,
            export: target.export.clone().unwrap_or_else(|| target.path.clone()),
            outcome: probe(&target),
        })
        .collect();
    print_table(&rows);
    let trunked = print_trunking(&rows);
    Ok(trunked && rows.iter().all(|r| r.outcome.is_ok()))
}

/// The error of a dnfstab with no export to check: no `server:` block, or
/// no `export:` line under any. Such a configuration can serve nothing, so
/// an empty table and success would hide the mistake.
fn nothing_to_serve(tab: &directnfs::config::DnfsTab) -> CliError {
    let file = tab.source.display();
    if tab.servers.is_empty() {
        return CliError::msg(format!(
            "{file}: no `server:` block: this dnfstab can serve nothing \
             (a server needs a `path:` and at least one `export:` line)"
        ));
    }
    let names: Vec<&str> = tab.servers.iter().map(|s| s.name.as_str()).collect();
    CliError::msg(format!(
        "{file}: no `export:` line under server {}: this dnfstab can serve nothing \
         (each `export:` line names an export to mount)",
        names.join(", ")
    ))
}

/// NFSv4.1: a path of a server whose owner or scope differs from its
/// first path's would not be used by a client (session trunking needs
/// the same server, RFC 8881 §2.10.5): says so, and returns false.
fn print_trunking(rows: &[Row]) -> bool {
    let mut ok = true;
    for (i, r) in rows.iter().enumerate() {
        let Ok(Probe {
            owner: Some(own), ..
        }) = &r.outcome
        else {
            continue;
        };
        let first = rows[..i].iter().find_map(|f| match &f.outcome {
            Ok(Probe { owner: Some(o), .. }) if f.server == r.server => Some((f, o)),
            _ => None,
        });
        if let Some((f, o)) = first {
            if o != own {
                ok = false;
                println!(
                    "{}: path {} reaches server owner {} scope {}, path {} {} scope {}: \
                     not the same server, so NFSv4.1 would not use path {}",
                    r.server,
                    r.path,
                    printable(&own.0),
                    printable(&own.1),
                    f.path,
                    printable(&o.0),
                    printable(&o.1),
                    r.path
                );
            }
        }
    }
    ok
}

fn probe(target: &Target) -> std::result::Result<Probe, String> {
    let client = Client::mount(target).map_err(|e| e.to_string())?;
    let mut rtts = Vec::with_capacity(PINGS);
    for _ in 0..PINGS {
        rtts.push(client.ping().map_err(|e| e.to_string())?);
    }
    rtts.sort();
    let limits = client.limits();
    let stats = client.stats();
    let channel = stats
        .servers
        .iter()
        .flat_map(|s| &s.paths)
        .flat_map(|p| &p.channels)
        .next();
    Ok(Probe {
        rtmax: limits.rtmax,
        wtmax: limits.wtmax,
        rtt: rtts[rtts.len() / 2],
        buffers: channel.map_or((0, 0), |c| (c.send_buffer, c.recv_buffer)),
        proto: client.options().nfs_version.name(),
        sec: client.options().security.name(),
        slots: client.session_slots(),
        owner: client
            .server_owners()
            .into_iter()
            .next()
            .map(|o| (o.major_id, o.scope)),
    })
}

/// The server owner's major id as the table shows it (`-` on NFSv3).
fn owner_of(p: &Probe) -> String {
    p.owner
        .as_ref()
        .map_or("-".to_string(), |o| printable(&o.0))
}

fn print_table(rows: &[Row]) {
    let w = |f: &dyn Fn(&Row) -> usize, min: usize| rows.iter().map(f).max().unwrap_or(0).max(min);
    let ws = w(&|r| r.server.len(), 6);
    let wp = w(&|r| r.path.len(), 4);
    let we = w(&|r| r.export.len(), 6);
    let wo = w(&|r| r.outcome.as_ref().map_or(0, |p| owner_of(p).len()), 5);
    println!(
        "{:ws$}  {:wp$}  {:we$}  {:>6}  {:>8}  {:>8}  {:>9}  {:>9}  {:>9}  {:>7}  {:>5}  {:>5}  {:wo$}  SCOPE",
        "SERVER",
        "PATH",
        "EXPORT",
        "STATUS",
        "RTMAX",
        "WTMAX",
        "NULL RTT",
        "SNDBUF",
        "RCVBUF",
        "PROTO",
        "SEC",
        "SLOTS",
        "OWNER"
    );
    for r in rows {
        match &r.outcome {
            Ok(p) => println!(
                "{:ws$}  {:wp$}  {:we$}  {:>6}  {:>8}  {:>8}  {:>7.0}us  {:>9}  {:>9}  {:>7}  {:>5}  {:>5}  {:wo$}  {}",
                r.server,
                r.path,
                r.export,
                "ok",
                p.rtmax,
                p.wtmax,
                p.rtt.as_secs_f64() * 1e6,
                p.buffers.0,
                p.buffers.1,
                p.proto,
                p.sec,
                p.slots.map_or("-".to_string(), |n| n.to_string()),
                owner_of(p),
                p.owner.as_ref().map_or("-".to_string(), |o| printable(&o.1)),
            ),
            Err(e) => println!(
                "{:ws$}  {:wp$}  {:we$}  {:>6}  {e}",
                r.server, r.path, r.export, "FAILED"
            ),
        }
    }
}
