//! The AUTH_SYS credential every call carries (RFC 5531 appendix A): the mount
//! options' ids, or else the calling process's, its groups and host name.

use directnfs_wire::rpc::{AuthSys, OpaqueAuth};
use directnfs_wire::Encode;

use crate::config::MountOptions;

/// AUTH_SYS from the options, defaulting to the calling process's ids.
pub(super) fn credential(options: &MountOptions) -> Vec<u8> {
    // SAFETY: these libc calls take no pointers and cannot fail.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let gids = options.gids.clone().unwrap_or_else(process_groups);
    let auth = AuthSys {
        stamp: std::process::id(),
        machine_name: hostname().into_bytes(),
        uid: options.uid.unwrap_or(uid),
        gid: options.gid.unwrap_or(gid),
        gids,
    };
    let mut out = Vec::with_capacity(128);
    auth.to_opaque_auth().encode(&mut out);
    OpaqueAuth::none().encode(&mut out);
    out
}

fn process_groups() -> Vec<u32> {
    let mut groups = vec![0 as libc::gid_t; 64];
    // SAFETY: the buffer holds `groups.len()` gid_t values, as passed.
    let n = unsafe { libc::getgroups(groups.len() as libc::c_int, groups.as_mut_ptr()) };
    if n < 0 {
        return Vec::new();
    }
    groups.truncate(n as usize);
    groups.truncate(16);
    groups
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its full length, which is passed.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "directnfs".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}
