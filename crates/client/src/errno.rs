//! The one map from NFSv3 status codes (and RPC authentication failures)
//! to errno values, used by the Rust API (`io::ErrorKind`), the C library
//! and the SQLite VFS alike.
//!
//! Follows the Linux client's `nfs3_errtbl` where a user-space errno exists;
//! codes that Linux maps to kernel-internal values (BADHANDLE, TOOSMALL,
//! BADTYPE, SERVERFAULT, NOT_SYNC, BAD_COOKIE) map to the nearest POSIX one.

use directnfs_wire::nfs3::nfsstat3;
use directnfs_wire::rpc::AuthStat;

/// errno for an NFSv3 status (EIO for anything unknown).
pub fn nfs_errno(status: nfsstat3) -> i32 {
    match status {
        nfsstat3::NFS3_OK => 0,
        nfsstat3::NFS3ERR_PERM => libc::EPERM,
        nfsstat3::NFS3ERR_NOENT => libc::ENOENT,
        nfsstat3::NFS3ERR_IO => libc::EIO,
        nfsstat3::NFS3ERR_NXIO => libc::ENXIO,
        nfsstat3::NFS3ERR_ACCES => libc::EACCES,
        nfsstat3::NFS3ERR_EXIST => libc::EEXIST,
        nfsstat3::NFS3ERR_XDEV => libc::EXDEV,
        nfsstat3::NFS3ERR_NODEV => libc::ENODEV,
        nfsstat3::NFS3ERR_NOTDIR => libc::ENOTDIR,
        nfsstat3::NFS3ERR_ISDIR => libc::EISDIR,
        nfsstat3::NFS3ERR_INVAL => libc::EINVAL,
        nfsstat3::NFS3ERR_FBIG => libc::EFBIG,
        nfsstat3::NFS3ERR_NOSPC => libc::ENOSPC,
        nfsstat3::NFS3ERR_ROFS => libc::EROFS,
        nfsstat3::NFS3ERR_MLINK => libc::EMLINK,
        nfsstat3::NFS3ERR_NAMETOOLONG => libc::ENAMETOOLONG,
        nfsstat3::NFS3ERR_NOTEMPTY => libc::ENOTEMPTY,
        nfsstat3::NFS3ERR_DQUOT => libc::EDQUOT,
        nfsstat3::NFS3ERR_STALE => libc::ESTALE,
        nfsstat3::NFS3ERR_REMOTE => libc::EREMOTE,
        nfsstat3::NFS3ERR_BADHANDLE => libc::EBADF,
        nfsstat3::NFS3ERR_NOTSUPP => libc::EOPNOTSUPP,
        nfsstat3::NFS3ERR_TOOSMALL => libc::EINVAL,
        nfsstat3::NFS3ERR_BADTYPE => libc::EINVAL,
        nfsstat3::NFS3ERR_JUKEBOX => libc::EAGAIN,
        _ => libc::EIO,
    }
}

/// errno for an RPC MSG_DENIED AUTH_ERROR, whatever its `auth_stat`
/// (BADCRED, REJECTEDCRED, BADVERF, REJECTEDVERF, TOOWEAK, unknown ...):
/// EACCES. The server refused who we said we are (the AUTH_SYS uid, gid
/// and groups), how we said it, or where from (a non-privileged source
/// port on a `secure` export) — a permission problem, as the Linux client
/// reports it, not an I/O error. It is never retried.
pub fn auth_errno(_status: AuthStat) -> i32 {
    libc::EACCES
}

/// `io::ErrorKind` for an errno, as std maps it.
pub fn errno_kind(errno: i32) -> std::io::ErrorKind {
    std::io::Error::from_raw_os_error(errno).kind()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::ErrorKind;

    #[test]
    fn common_statuses_map_to_their_posix_errors() {
        assert_eq!(
            errno_kind(nfs_errno(nfsstat3::NFS3ERR_NOENT)),
            ErrorKind::NotFound
        );
        assert_eq!(
            errno_kind(nfs_errno(nfsstat3::NFS3ERR_EXIST)),
            ErrorKind::AlreadyExists
        );
        assert_eq!(
            errno_kind(nfs_errno(nfsstat3::NFS3ERR_ACCES)),
            ErrorKind::PermissionDenied
        );
        assert_eq!(
            errno_kind(nfs_errno(nfsstat3::NFS3ERR_ISDIR)),
            ErrorKind::IsADirectory
        );
        assert_eq!(
            errno_kind(nfs_errno(nfsstat3::NFS3ERR_NOTDIR)),
            ErrorKind::NotADirectory
        );
        assert_eq!(
            errno_kind(nfs_errno(nfsstat3::NFS3ERR_NOTEMPTY)),
            ErrorKind::DirectoryNotEmpty
        );
    }

    #[test]
    fn auth_errors_map_to_eacces() {
        for s in [
            AuthStat::AUTH_BADCRED,
            AuthStat::AUTH_REJECTEDCRED,
            AuthStat::AUTH_BADVERF,
            AuthStat::AUTH_REJECTEDVERF,
            AuthStat::AUTH_TOOWEAK,
            AuthStat::AUTH_FAILED,
            AuthStat(0x1234),
        ] {
            assert_eq!(auth_errno(s), libc::EACCES, "{s:?}");
            assert_eq!(errno_kind(auth_errno(s)), ErrorKind::PermissionDenied);
        }
    }

    #[test]
    fn unknown_status_is_eio() {
        assert_eq!(nfs_errno(nfsstat3(12345)), libc::EIO);
    }
}
