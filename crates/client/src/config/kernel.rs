//! Kernel NFS mount-option strings, as DBAs keep them in their runbooks:
//! `rw,bg,hard,nointr,rsize=1048576,wsize=1048576,tcp,vers=3,timeo=600,actimeo=0`.
//! Given as `options:` in the dnfstab or `options=` in a URL.
//!
//! Each option is one of three kinds:
//!
//! | kind | options | effect |
//! |---|---|---|
//! | mapped | `hard`, `soft`, `timeo=`, `retrans=`, `rsize=`, `wsize=`, `vers=`/`nfsvers=`, `ro`, `rw`, `port=`, `mountport=`, `sec=`, `nconnect=` (channels per path), `retry=` (minutes: `mnt_timeout`), `sync` (FILE_SYNC writes), `lock`, `nolock`, `local_lock=` (which locks stay on this host), `nlmport=`, `xprtsec=` (RPC-with-TLS; the certificates come from `tls_*` keys, not from this string) | sets the directnfs option of the same meaning, validated the same way |
//! | accepted | `tcp`, `proto=tcp`, `nointr`, `intr`, `noac`, `actimeo=0` (and `acregmin/acregmax/acdirmin/acdirmax=0`), `lookupcache=none`, `forcedirectio`, `bg`, `fg`, `cto`, `nocto`, `noatime`, `nodiratime`, `relatime`, `defaults`, `auto`, `noauto`, `_netdev`, `nosuid`, `nodev`, `noexec` | none: they describe what directnfs always does (TCP, no attribute or data cache, direct I/O, waiting for the server) or are mount-table flags without meaning in a process |
//! | rejected | everything else, e.g. `udp`, `async`, `fsc`, `actimeo=60` | an error naming the option and why |

// This module names no other module of `config`: `options` calls [`apply`]
// for its `options=` key, and `MountOptions` implements [`SetByKey`].

/// The options [`apply`] sets, by their directnfs key (`hard`, `rsize`,
/// `ro`). `MountOptions` implements it with its `set`.
pub trait SetByKey: Clone {
    /// Sets one option from its textual form; the error says why the value
    /// is wrong.
    fn set_key(&mut self, key: &str, value: &str) -> Result<(), String>;
}

/// A kernel option directnfs does not take, or whose value is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("mount option \"{option}\" rejected: {reason}")]
pub struct Rejected {
    /// The option as written (`udp`, `rsize=12`).
    pub option: String,
    /// Why.
    pub reason: String,
}

/// What [`apply`] did with each option of a string, for a verbose caller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelOptionReport {
    /// Options that set a directnfs option.
    pub mapped: Vec<String>,
    /// Options accepted without effect (what directnfs always does).
    pub accepted: Vec<String>,
}

/// Applies a kernel mount-option string to `options`. On error (the first
/// rejected or invalid option) `options` is unchanged.
pub fn apply<T: SetByKey>(options: &mut T, text: &str) -> Result<KernelOptionReport, Rejected> {
    let mut next = options.clone();
    let mut report = KernelOptionReport::default();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, value) = match item.split_once('=') {
            Some((n, v)) => (n.trim().to_ascii_lowercase(), Some(v.trim())),
            None => (item.to_ascii_lowercase(), None),
        };
        match classify(&name, value) {
            Kind::Map(key, v) => {
                next.set_key(key, v).map_err(|e| reject(item, &e))?;
                report.mapped.push(item.to_owned());
            }
            Kind::ReadOnly(ro) => {
                let key = if ro { "ro" } else { "rw" };
                next.set_key(key, "").map_err(|e| reject(item, &e))?;
                report.mapped.push(item.to_owned());
            }
            Kind::MinutesToMntTimeout(v) => {
                let minutes: u64 = v
                    .parse()
                    .map_err(|_| reject(item, "retry= takes whole minutes"))?;
                let secs = minutes.saturating_mul(60).max(1).to_string();
                next.set_key("mnt_timeout", &secs)
                    .map_err(|e| reject(item, &e))?;
                report.mapped.push(item.to_owned());
            }
            Kind::Accept => report.accepted.push(item.to_owned()),
            Kind::Reject(why) => return Err(reject(item, why)),
        }
    }
    *options = next;
    Ok(report)
}

enum Kind<'a> {
    /// Set this directnfs key to this value.
    Map(&'static str, &'a str),
    ReadOnly(bool),
    MinutesToMntTimeout(&'a str),
    Accept,
    Reject(&'static str),
}

fn classify<'a>(name: &str, value: Option<&'a str>) -> Kind<'a> {
    const NO_CACHE: &str =
        "directnfs never caches attributes; only the zero form (noac, actimeo=0) describes it";
    match (name, value) {
        ("hard", None) => Kind::Map("hard", ""),
        ("soft", None) => Kind::Map("soft", ""),
        ("ro", None) => Kind::ReadOnly(true),
        ("rw", None) => Kind::ReadOnly(false),
        ("sync", None) => Kind::Map("stable", "file_sync"),
        (
            "timeo" | "retrans" | "rsize" | "wsize" | "port" | "mountport" | "sec" | "vers"
            | "nfsvers",
            Some(v),
        ) => Kind::Map(mapped_key(name), v),
        ("nconnect", Some(v)) => Kind::Map("connections", v),
        ("lock", None) => Kind::Map("lock", ""),
        ("nolock", None) => Kind::Map("nolock", ""),
        ("local_lock", Some(v)) => Kind::Map("local_lock", v),
        ("nlmport", Some(v)) => Kind::Map("nlm_port", v),
        ("xprtsec", Some(v)) => Kind::Map("xprtsec", v),
        ("retry", Some(v)) => Kind::MinutesToMntTimeout(v),
        ("proto", Some(v)) if v.eq_ignore_ascii_case("tcp") => Kind::Accept,
        ("proto" | "mountproto", Some(_)) | ("udp", None) => {
            Kind::Reject("directnfs speaks NFS over TCP only")
        }
        ("actimeo" | "acregmin" | "acregmax" | "acdirmin" | "acdirmax", Some(v)) => {
            if v.parse::<u64>() == Ok(0) {
                Kind::Accept
            } else {
                Kind::Reject(NO_CACHE)
            }
        }
        ("lookupcache", Some(v)) if v.eq_ignore_ascii_case("none") => Kind::Accept,
        ("lookupcache", Some(_)) => Kind::Reject(NO_CACHE),
        (
            "tcp" | "nointr" | "intr" | "noac" | "forcedirectio" | "bg" | "fg" | "cto"
            | "nocto" | "noatime" | "nodiratime" | "relatime" | "defaults" | "auto" | "noauto"
            | "_netdev" | "nosuid" | "nodev" | "noexec",
            None,
        ) => Kind::Accept,
        ("async", None) => Kind::Reject(
            "directnfs writes FILE_SYNC, durable when acknowledged; say stable=unstable for UNSTABLE writes and COMMIT on fsync",
        ),
        ("fsc", None) => Kind::Reject("directnfs has no data cache"),
        ("hard" | "soft" | "ro" | "rw" | "sync" | "tcp" | "udp", Some(_)) => {
            Kind::Reject("takes no value")
        }
        _ => Kind::Reject("not a kernel NFS option directnfs knows"),
    }
}

/// The directnfs key of a kernel option that maps one to one.
fn mapped_key(name: &str) -> &'static str {
    match name {
        "timeo" => "timeo",
        "retrans" => "retrans",
        "rsize" => "rsize",
        "wsize" => "wsize",
        "port" => "port",
        "mountport" => "mount_port",
        "sec" => "sec",
        _ => "vers",
    }
}

/// A rejection, or an error from the mapped directnfs key, named after the
/// kernel option.
fn reject(option: &str, reason: &str) -> Rejected {
    Rejected {
        option: option.to_owned(),
        reason: reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::options::{MountOptions, NfsVersion, StableMode};
    use std::time::Duration;

    #[test]
    fn a_runbook_string_maps_and_accepts_every_option() {
        let mut o = MountOptions::default();
        let r = apply(
            &mut o,
            "rw,bg,hard,nointr,rsize=1048576,wsize=1048576,tcp,vers=3,timeo=600,actimeo=0",
        )
        .expect("accepted");
        assert_eq!(
            r.mapped,
            [
                "rw",
                "hard",
                "rsize=1048576",
                "wsize=1048576",
                "vers=3",
                "timeo=600"
            ]
        );
        assert_eq!(r.accepted, ["bg", "nointr", "tcp", "actimeo=0"]);
        assert!(o.hard && !o.read_only);
        assert_eq!(o.timeo, Duration::from_secs(60));
        assert_eq!((o.rsize, o.wsize), (1 << 20, 1 << 20));
    }

    #[test]
    fn mapped_options_set_their_directnfs_meaning() {
        let mut o = MountOptions::default();
        apply(
            &mut o,
            "ro,soft,retrans=5,port=2049,mountport=20048,nconnect=8,retry=2,sec=sys,sync",
        )
        .expect("accepted");
        assert!(o.read_only && !o.hard);
        assert_eq!(o.retrans, 5);
        assert_eq!((o.nfs_port, o.mount_port), (Some(2049), Some(20048)));
        assert_eq!(o.connections, 8);
        assert_eq!(o.mnt_timeout, Duration::from_secs(120));
    }

    #[test]
    fn options_that_describe_what_directnfs_does_are_accepted() {
        // The book's list (`docs/book/src/operating.md`, "Kernel mount options").
        let said = "tcp,proto=tcp,nointr,intr,noac,actimeo=0,lookupcache=none,\
                    forcedirectio,bg,fg,cto,nocto,noatime,defaults,_netdev";
        let mut o = MountOptions::default();
        let r = apply(&mut o, said).expect("accepted");
        assert_eq!(
            r.accepted.len(),
            said.split(',').count(),
            "{:?}",
            r.accepted
        );
        assert!(r.mapped.is_empty(), "{:?}", r.mapped);
        assert_eq!(o, MountOptions::default());
        let mut o = MountOptions {
            stable: StableMode::Unstable,
            ..MountOptions::default()
        };
        apply(&mut o, "nfsvers=4.1,sync").expect("accepted");
        assert_eq!(o.nfs_version, NfsVersion::V41);
        assert_eq!(o.stable, StableMode::FileSync);
    }

    #[test]
    fn udp_is_rejected_with_the_option_and_the_reason() {
        let mut o = MountOptions::default();
        let e = apply(&mut o, "rw,udp,hard").expect_err("rejected");
        assert_eq!(
            e.to_string(),
            "mount option \"udp\" rejected: directnfs speaks NFS over TCP only"
        );
        let e = apply(&mut o, "proto=udp").expect_err("rejected");
        assert!(e.to_string().contains("\"proto=udp\""), "{e}");
    }

    #[test]
    fn lock_options_map_to_local_lock() {
        use super::super::options::LocalLock;
        let mut o = MountOptions::default();
        apply(&mut o, "rw,hard,nolock").expect("accepted");
        assert_eq!(o.local_lock, LocalLock::All);
        apply(&mut o, "lock").expect("accepted");
        assert_eq!(o.local_lock, LocalLock::None);
        apply(&mut o, "local_lock=flock,nlmport=4045").expect("accepted");
        assert_eq!((o.local_lock, o.nlm_port), (LocalLock::Flock, Some(4045)));
        assert!(apply(&mut o, "local_lock=most").is_err());
    }

    #[test]
    fn xprtsec_maps_to_rpc_with_tls() {
        use super::super::options::Xprtsec;
        let mut o = MountOptions::default();
        apply(&mut o, "rw,hard,xprtsec=tls").expect("accepted");
        assert_eq!(o.xprtsec, Xprtsec::Tls);
        assert!(apply(&mut o, "xprtsec=ssl").is_err());
    }

    #[test]
    fn caching_options_are_rejected_with_why() {
        let mut o = MountOptions::default();
        for (opt, why) in [
            ("actimeo=60", "never caches attributes"),
            ("async", "FILE_SYNC"),
            ("fsc", "no data cache"),
            ("wibble", "not a kernel NFS option"),
        ] {
            let e = apply(&mut o, opt).expect_err(opt);
            assert!(e.to_string().contains(why), "{opt}: {e}");
        }
    }

    #[test]
    fn a_bad_value_names_the_kernel_option_and_leaves_options_unchanged() {
        let mut o = MountOptions::default();
        let e = apply(&mut o, "ro,rsize=12").expect_err("rejected");
        assert!(e.to_string().contains("\"rsize=12\""), "{e}");
        assert_eq!(o, MountOptions::default());
        let e = apply(&mut o, "vers=4").expect_err("rejected");
        assert!(e.to_string().contains("\"vers=4\""), "{e}");
    }

    #[test]
    fn names_are_case_insensitive_and_blanks_are_skipped() {
        let mut o = MountOptions::default();
        apply(&mut o, " RO , ,Hard ,TCP").expect("accepted");
        assert!(o.read_only && o.hard);
    }
}
