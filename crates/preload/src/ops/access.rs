//! Permission checks made on this side, from the mode bits and owners the
//! server returned (the kernel checks at `open` and `access` time; the NFS
//! server checks again at every READ and WRITE with the same credential).

use dnfs::Metadata;
use libc::c_int;

use crate::state::State;

/// Who is asking: the AUTH_SYS identity the mount uses.
#[derive(Debug, Clone, Copy)]
pub struct Who {
    /// User id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
}

impl Who {
    /// The effective identity, or the mount's `uid=`/`gid=` when set.
    pub fn effective(state: &State, mount: usize) -> Who {
        Self::with(state, mount, true)
    }

    /// The real identity (`access(2)` checks with it).
    pub fn real(state: &State, mount: usize) -> Who {
        Self::with(state, mount, false)
    }

    fn with(state: &State, mount: usize, effective: bool) -> Who {
        let options = &state.config.mounts[mount].target.options;
        // SAFETY: these calls take no arguments and cannot fail.
        let (uid, gid) = unsafe {
            if effective {
                (libc::geteuid(), libc::getegid())
            } else {
                (libc::getuid(), libc::getgid())
            }
        };
        Who {
            uid: options.uid.unwrap_or(uid),
            gid: options.gid.unwrap_or(gid),
        }
    }
}

/// True if `who` may do `want` (`R_OK | W_OK | X_OK` bits) to the object.
pub fn may(who: Who, meta: &Metadata, want: c_int) -> bool {
    let want = (want & 7) as u32;
    if who.uid == 0 {
        // root: everything, except execute needs some execute bit.
        return want & 1 == 0 || meta.mode & 0o111 != 0 || meta.is_dir();
    }
    let bits = if meta.uid == who.uid {
        meta.mode >> 6
    } else if meta.gid == who.gid || in_groups(meta.gid) {
        meta.mode >> 3
    } else {
        meta.mode
    } & 7;
    bits & want == want
}

/// The `R_OK`/`W_OK` bits an open with these flags needs.
pub fn wanted_by_open(flags: c_int) -> c_int {
    match flags & libc::O_ACCMODE {
        libc::O_WRONLY => libc::W_OK,
        libc::O_RDWR => libc::R_OK | libc::W_OK,
        _ => libc::R_OK,
    }
}

fn in_groups(gid: u32) -> bool {
    let mut groups = [0 as libc::gid_t; 256];
    // SAFETY: the buffer holds 256 entries, as passed.
    let n = unsafe { libc::getgroups(groups.len() as c_int, groups.as_mut_ptr()) };
    n > 0 && groups[..n as usize].contains(&gid)
}
