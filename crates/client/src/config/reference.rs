//! The table of every mount option: each key with its aliases, its value and
//! its default. One list of rows makes [`OPTIONS`] (and its rustdoc table)
//! and [`markdown`], which `dnfs generate options` writes into the book, so
//! the two never disagree. A test checks the rows against the keys
//! [`MountOptions::set`](super::MountOptions::set) accepts.

/// One row of the option table. The cells are Markdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionRow {
    /// The key and its aliases, each in backticks: `` `port` (`nfsport`) ``.
    pub keys: &'static str,
    /// What the key takes and what it does.
    pub value: &'static str,
    /// The value when the key is not given.
    pub default: &'static str,
}

/// Makes [`OPTIONS`] and its rustdoc table from the same rows.
macro_rules! option_table {
    ($(($keys:literal, $value:literal, $default:literal $(,)?)),* $(,)?) => {
        /// Every key of a URL query and of a dnfstab server block (lower case,
        /// `_`; keys are case-insensitive and `-` is the same as `_`):
        ///
        /// | key (aliases) | value | default |
        /// |---|---|---|
        $(#[doc = concat!("| ", $keys, " | ", $value, " | ", $default, " |")])*
        pub const OPTIONS: &[OptionRow] = &[
            $(OptionRow { keys: $keys, value: $value, default: $default }),*
        ];
    };
}

option_table![
    (
        "`port` (`nfsport`, `nfs_port`)",
        "NFS port; `0` = ask the portmapper",
        "portmapper",
    ),
    (
        "`mount_port` (`mountport`)",
        "MOUNT port; `0` = ask the portmapper",
        "portmapper",
    ),
    (
        "`nlm_port` (`nlmport`)",
        "NFSv3: the port of the server's lock manager (NLM v4); `0` = ask the portmapper",
        "portmapper",
    ),
    (
        "`local_lock`",
        "NFSv3, as Linux `local_lock=`: which locks stay on this host only: `none` (`fcntl` and `flock` locks go to the server's NLM), `posix` (`fcntl` locks local), `flock` (`flock` locks local), `all`",
        "`none`",
    ),
    (
        "`nolock` / `lock`",
        "flag: `nolock` is `local_lock=all` (Linux `nolock`), `lock` is `local_lock=none`",
        "`lock`",
    ),
    (
        "`connections`",
        "channels (TCP connections) per path, 1..=64",
        "4",
    ),
    (
        "`stable`",
        "`file_sync` (`filesync`, `sync`) or `unstable`",
        "`file_sync`",
    ),
    (
        "`timeo`",
        "RPC timeout, **deciseconds** like Linux `timeo=` (`timeo=600` = 60 s); `ms`/`s` suffixes accepted; 100 ms..=600 s",
        "10 s",
    ),
    (
        "`retrans`",
        "retransmissions before a soft mount fails / a hard mount reports, 0..=1000",
        "3",
    ),
    (
        "`hard` / `soft`",
        "flag, or `=true/false`",
        "hard",
    ),
    (
        "`uid`, `gid`",
        "AUTH_SYS identity",
        "the calling process's effective ids",
    ),
    (
        "`gids`",
        "supplementary groups `1,2,3`, at most 16; empty = none",
        "the calling process's groups",
    ),
    (
        "`max_inflight`",
        "in-flight RPCs per channel, 1..=65536",
        "256",
    ),
    (
        "`max_client_inflight`",
        "in-flight RPCs of the whole client (all channels), 1..=1048576; callers wait for room beyond it",
        "4096",
    ),
    (
        "`write_behind`",
        "unstable mode, either version (on NFSv4.1 a WRITE in flight holds a session slot; with none to spare, `write_at` waits for its reply): bytes of writes per open file that may be in flight unacknowledged (`write_at` returns before the reply; `fsync` is the barrier; `k`/`m` suffixes; never more than 16 WRITEs per file), `0` = off, else 4 KiB..=1 GiB; ignored in `file_sync` mode",
        "8 MiB",
    ),
    (
        "`write_behind_client`",
        "unstable mode only: bytes of write-behind writes of the whole client (all its files) that may be in flight or held; a writer past it waits for replies even where its file has room (`k`/`m`/`g` suffixes), 4 KiB..=16 GiB",
        "64 MiB",
    ),
    (
        "`rsize`, `wsize`",
        "caps on READ/WRITE size in bytes (`k`/`m` suffixes = KiB/MiB), 4 KiB..=16 MiB; the server's rtmax/wtmax still applies",
        "1 MiB",
    ),
    (
        "`dontroute`",
        "flag: send from the path's `local:` address without routing",
        "off",
    ),
    (
        "`sockbuf`",
        "TCP socket buffers of each channel: `auto` (the kernel's autotuning), a size in bytes (`k`/`m` suffixes, 4 KiB..=256 MiB) asked for as SO_SNDBUF and SO_RCVBUF, or `prefer:SIZE`: that size in each direction whose kernel maximum (`net.core.wmem_max`, `rmem_max`) allows it in full, autotuning in the other",
        "`prefer:4m`",
    ),
    (
        "`mnt_timeout`",
        "seconds to keep trying to mount a server that cannot be reached (refused or timed-out connections, programs not registered with its portmapper; a server that answers and refuses fails at once), with pauses of 0.25 s doubling to 5 s (`ms`/`s` suffixes accepted), 1 s..=86400 s",
        "600 s",
    ),
    (
        "`resvport` / `noresvport`",
        "flag: bind a privileged (< 1024) source port",
        "off",
    ),
    (
        "`nfs_version` (`version`, `vers`, `nfsvers`)",
        "`3`, `v3`, `nfsv3`, `nfs3`; or `4.1`, `v4.1`, `nfsv4.1`, `nfs4.1`, `nfsv41` (NFSv4.1); anything else is an error",
        "3",
    ),
    (
        "`security` (`security_default`, `sec`)",
        "`sys` (AUTH_SYS), or Kerberos through RPCSEC_GSS: `krb5` (authentication), `krb5i` (and integrity), `krb5p` (and privacy), on NFSv3 and NFSv4.1 (see docs/security.md); anything else is an error",
        "sys",
    ),
    (
        "`ro` / `rw`",
        "flag: `ro` makes every write (WRITE, SETATTR, CREATE, REMOVE, RENAME, MKDIR, COMMIT, ...) fail with EROFS before it is sent",
        "rw",
    ),
    (
        "`options`",
        "a kernel mount-option string (`rw,bg,hard,tcp,vers=3,timeo=600,...`): see [`super::kernel`]",
        "",
    ),
    (
        "`stats` (`publish_stats`)",
        "flag: publish this client's statistics on the process's local endpoint (`dnfs stats`)",
        "on",
    ),
    (
        "`owner_reuse`",
        "flag, NFSv4.1 only: this client's client owner is a slot of this user on this host that a client which died (SIGKILL, a crash) left free, so the server drops the dead client's opens and locks as soon as this one has a session instead of after its lease; off: an owner of its own",
        "on",
    ),
    (
        "`fork_spares`",
        "flag, NFSv3 only: keep spare connections for the children this process forks (a PostgreSQL postmaster's backends): a child takes one at its first call instead of connecting, and hands it back at exit when every call it made on it was answered, for the next child; `DIRECTNFS_FORK_SPARES=off` turns it off for every client of a process",
        "on",
    ),
    (
        "`io_classes`",
        "flag: honour each file's I/O class (`File::set_io_class`: log, data or bulk): the last channel of each path with two `connections` or more is its log lane, log requests go on it and bulk ones never do, and log requests may exceed `max_client_inflight` by 16; off: every request is data (see the book's I/O classes chapter)",
        "on",
    ),
    (
        "`hedge`",
        "`auto` or a flag, NFSv3 only: hedged reads: a READ outstanding longer than the lowest recent p95 READ latency of the paths (clamped to `hedge_min_ms`..`hedge_max_ms`) is sent again on another channel, another path first, and the first reply wins; a path whose p95 is over 4x the best path's is avoided (probed by one READ in 64), and hedges are at most 10% of READs plus 8; writes and COMMIT never are (see the book's multipath chapter); `auto`: on for a mount of two or more paths, off for one path (a second copy would go to the same server by the same route)",
        "auto",
    ),
    (
        "`hedge_min_ms`, `hedge_max_ms`",
        "the bounds of the hedge delay, in milliseconds (1 to 10000, `hedge_max_ms` at least `hedge_min_ms`); the delay is `hedge_max_ms` until 8 READs of a path were timed",
        "2, 200",
    ),
    (
        "`alert_log`",
        "where this process's alert lines go: `stderr`, `off`, `syslog`, `syslog:SOCKET`, `file:PATH` or an absolute path (see [`crate::alert`])",
        "stderr",
    ),
    (
        "`xprtsec`",
        "`none`, `tls` or `mtls` (the Linux and libnfs key): RPC-with-TLS (RFC 9289) on every connection, reconnects included: NFS, MOUNT, the portmapper and NLM, each with the AUTH_TLS probe, then TLS 1.3 (ALPN `sunrpc`), the server's certificate checked against `tls_ca` and `tls_name`; `mtls` also sends `tls_cert`. A program whose server answers the probe without STARTTLS fails the mount, nothing sent in clear (see docs/security.md)",
        "`none`",
    ),
    (
        "`tls_ca`",
        "PEM file of the CA(s) that sign the server's certificate",
        "the system bundle (`SSL_CERT_FILE`, else `/etc/ssl/certs/ca-certificates.crt`)",
    ),
    (
        "`tls_cert`, `tls_key`",
        "PEM client certificate chain and its private key, for `xprtsec=mtls` only (required there)",
        "",
    ),
    (
        "`tls_name`",
        "the name the server's certificate must carry (DNS name or IP)",
        "the server as the URL or dnfstab names it",
    ),
    (
        "`tls_direct`",
        "flag: TLS from the first byte, without the AUTH_TLS probe (a server behind a TLS terminator)",
        "off",
    ),
    (
        "`readahead`, `autoreconnect`, `tcp_syncnt`",
        "libnfs URL keys: accepted and **ignored** (see [`MountOptions::is_ignored_key`](super::MountOptions::is_ignored_key))",
        "",
    ),
];

/// [`OPTIONS`] as a Markdown table, rustdoc links made plain code
/// (`` [`crate::alert`] `` becomes `` `crate::alert` ``).
pub fn markdown() -> String {
    let mut out = String::from("| key (aliases) | value | default |\n|---|---|---|\n");
    for row in OPTIONS {
        let cells = [row.keys, row.value, row.default].map(plain_links);
        out.push_str(
            &format!("| {} | {} | {} |\n", cells[0], cells[1], cells[2]).replace("|  |", "| |"),
        );
    }
    out
}

/// `` [`x`] `` and `` [`x`](path) `` -> `` `x` ``: a rustdoc link has no
/// target outside rustdoc.
fn plain_links(cell: &str) -> String {
    let mut out = String::new();
    let mut rest = cell;
    while let Some(start) = rest.find("[`") {
        let Some(len) = rest[start..].find("`]") else {
            break;
        };
        out.push_str(&rest[..start]);
        out.push_str(&rest[start + 1..start + len + 1]);
        rest = &rest[start + len + 2..];
        if rest.starts_with('(') {
            if let Some(close) = rest.find(')') {
                rest = &rest[close + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MountOptions;

    /// The names in backticks in a row's key cell.
    fn names(row: &OptionRow) -> Vec<String> {
        row.keys
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn every_accepted_key_has_a_row_and_every_row_names_accepted_keys() {
        let known: Vec<&str> = MountOptions::known_keys().collect();
        let listed: Vec<String> = OPTIONS.iter().flat_map(names).collect();
        for key in &known {
            assert!(
                listed.iter().any(|l| l == key),
                "no row of OPTIONS names `{key}`"
            );
        }
        for name in &listed {
            assert!(
                known.contains(&name.as_str()),
                "OPTIONS names `{name}`, which set() refuses"
            );
        }
    }

    #[test]
    fn markdown_has_one_line_per_row_and_no_rustdoc_links() {
        let table = markdown();
        assert_eq!(table.lines().count(), OPTIONS.len() + 2);
        assert!(!table.contains("[`"), "{table}");
        assert!(table.contains("| `alert_log` |"), "{table}");
        assert!(table.contains("(see `crate::alert`)"), "{table}");
    }

    #[test]
    fn plain_links_keeps_the_code_and_drops_the_target() {
        assert_eq!(
            plain_links("see [`a::b`] and [`c`](x::c) now"),
            "see `a::b` and `c` now"
        );
        assert_eq!(plain_links("no [`link"), "no [`link");
    }
}
