//! Attributes a program changes and asks about on NFSv4.1: SETATTR of
//! mode, owner, size and times (RFC 8881 §18.30), ACCESS (§18.1), and
//! the file system's space and file slots as GETATTR of the export's
//! `space_*` and `files_*` attributes (§5.8.2; NFSv4 has no FSSTAT).

use std::time::{SystemTime, UNIX_EPOCH};

use directnfs_wire::nfs3;
use directnfs_wire::nfs4::{
    bitmap4, fattr4, nfs_argop4, nfs_fh4, nfs_resop4, nfstime4, settime4, stateid4, time_how4,
    utf8string, ACCESS4args, GETATTR4args, Nfs4Res, PUTFH4args, FATTR4_FILES_AVAIL,
    FATTR4_FILES_FREE, FATTR4_FILES_TOTAL, FATTR4_SPACE_AVAIL, FATTR4_SPACE_FREE,
    FATTR4_SPACE_TOTAL,
};

use super::open_file::OpenFile;
use super::ops::{self, components, missing, Ops};
use super::session::Session;
use crate::attrs::{FsStat, SetAttrs, SetTimeTo};
use crate::error::{Error, Result};
use crate::remote::Remote;

/// The attributes `fsstat` asks for.
const FS_SPACE_ATTRS: &[u32] = &[
    FATTR4_FILES_AVAIL,
    FATTR4_FILES_FREE,
    FATTR4_FILES_TOTAL,
    FATTR4_SPACE_AVAIL,
    FATTR4_SPACE_FREE,
    FATTR4_SPACE_TOTAL,
];

/// Which of the `ACCESS3_*` bits in `mask` the server grants on `path`.
/// NFSv4's `ACCESS4_*` bits have the same values (RFC 8881 §18.1.1 and
/// RFC 1813 §3.3.4 both: READ 1, LOOKUP 2, MODIFY 4, EXTEND 8, DELETE
/// 0x10, EXECUTE 0x20).
pub(crate) fn access(s: &Session, remote: &Remote, path: &str, mask: u32) -> Result<u32> {
    let mut ops = Ops::default();
    ops.walk(&s.root, &components(path)?);
    ops.push(nfs_argop4::OP_ACCESS(ACCESS4args { access: mask }));
    let res = ops.run(s, remote, "ACCESS", path, nfs3::NFSPROC3_ACCESS, false)?;
    match res.last() {
        Some(nfs_resop4::OP_ACCESS(Nfs4Res::Ok(ok))) => Ok(ok.access & mask),
        _ => Err(missing("ACCESS", path)),
    }
}

/// Space and file slots of the export's file system. An attribute the
/// server does not return is an error: a zero would read as "full".
pub(crate) fn fsstat(s: &Session, remote: &Remote) -> Result<FsStat> {
    let mut ops = Ops::default();
    ops.push(nfs_argop4::OP_PUTFH(PUTFH4args { object: s.root }));
    ops.push(nfs_argop4::OP_GETATTR(GETATTR4args {
        attr_request: bitmap4::from_bits(FS_SPACE_ATTRS),
    }));
    let res = ops.run(s, remote, "FSSTAT", "/", nfs3::NFSPROC3_FSSTAT, false)?;
    let Some(nfs_resop4::OP_GETATTR(Nfs4Res::Ok(ok))) = res.last() else {
        return Err(missing("FSSTAT", "/"));
    };
    let a = &ok.obj_attributes;
    let (
        Some(total_bytes),
        Some(free_bytes),
        Some(avail_bytes),
        Some(total_files),
        Some(free_files),
        Some(avail_files),
    ) = (
        a.space_total,
        a.space_free,
        a.space_avail,
        a.files_total,
        a.files_free,
        a.files_avail,
    )
    else {
        return Err(Error::Protocol {
            op: "FSSTAT",
            path: "/".into(),
            detail: "the server did not return the space_* and files_* attributes asked for".into(),
        });
    };
    Ok(FsStat {
        total_bytes,
        free_bytes,
        avail_bytes,
        total_files,
        free_files,
        avail_files,
    })
}

/// Changes attributes of `path` (SETATTR with the anonymous stateid: no
/// open state, RFC 8881 §8.2.3).
pub(crate) fn set_attrs(s: &Session, remote: &Remote, path: &str, attrs: &SetAttrs) -> Result<()> {
    remote.check_writable(nfs3::NFSPROC3_SETATTR, "SETATTR", path)?;
    let a = to_fattr4(attrs, path)?;
    ops::setattr(s, remote, None, path, stateid4::ANONYMOUS, a)
}

/// Changes attributes of the object `handle` names, which has no open
/// state (a directory or a link: OPEN refuses them): SETATTR on the handle
/// with the anonymous stateid.
pub(crate) fn set_handle_attrs(
    s: &Session,
    remote: &Remote,
    handle: &nfs_fh4,
    path: &str,
    attrs: &SetAttrs,
) -> Result<()> {
    remote.check_writable(nfs3::NFSPROC3_SETATTR, "SETATTR", path)?;
    let fh = *handle;
    let a = to_fattr4(attrs, path)?;
    ops::setattr(s, remote, Some(&fh), path, stateid4::ANONYMOUS, a)
}

/// Changes attributes of an open file: SETATTR on its handle with its
/// open stateid (a size change needs one that allows writing).
pub(crate) fn set_file_attrs(open: &OpenFile, attrs: &SetAttrs) -> Result<()> {
    let remote = open.remote();
    remote.check_writable(nfs3::NFSPROC3_SETATTR, "SETATTR", &open.path)?;
    let s = open.session()?;
    let a = to_fattr4(attrs, &open.path)?;
    open.with_state("SETATTR", |stateid| {
        ops::setattr(s, remote, Some(&open.fh), &open.path, *stateid, a.clone())
    })
}

/// NFSv4 names owners by strings; the project's servers take numeric ones
/// (`Only_Numeric_Owners`), which is also how `Metadata` reads them back.
fn to_fattr4(a: &SetAttrs, path: &str) -> Result<fattr4> {
    let id = |n: u32| utf8string::from(n.to_string().as_str());
    Ok(fattr4 {
        mode: a.mode.map(|m| m & 0o7777),
        owner: a.uid.map(id),
        owner_group: a.gid.map(id),
        size: a.size,
        time_access_set: set_time(a.atime, path)?,
        time_modify_set: set_time(a.mtime, path)?,
        ..Default::default()
    })
}

/// NFSv4 times are signed 64-bit seconds: any `SystemTime` fits.
fn set_time(t: SetTimeTo, path: &str) -> Result<Option<settime4>> {
    Ok(match t {
        SetTimeTo::Keep => None,
        SetTimeTo::ServerNow => Some(settime4::ServerTime(time_how4::SET_TO_SERVER_TIME4)),
        SetTimeTo::At(at) => Some(settime4::ClientTime(nfstime(at).ok_or_else(|| {
            Error::InvalidInput(format!(
                "SETATTR {path}: {at:?} is outside the NFSv4 time range"
            ))
        })?)),
    })
}

fn nfstime(at: SystemTime) -> Option<nfstime4> {
    match at.duration_since(UNIX_EPOCH) {
        Ok(d) => Some(nfstime4 {
            seconds: i64::try_from(d.as_secs()).ok()?,
            nseconds: d.subsec_nanos(),
        }),
        // Before 1970: whole seconds down, nanoseconds up (RFC 8881
        // §3.3.1: `nseconds` is always added to a signed `seconds`).
        Err(e) => {
            let d = e.duration();
            let secs = i64::try_from(d.as_secs()).ok()?;
            Some(match d.subsec_nanos() {
                0 => nfstime4 {
                    seconds: -secs,
                    nseconds: 0,
                },
                n => nfstime4 {
                    seconds: -secs - 1,
                    nseconds: 1_000_000_000 - n,
                },
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn times_before_1970_count_nanoseconds_upward() {
        let t = UNIX_EPOCH - Duration::new(1, 250_000_000);
        assert_eq!(
            nfstime(t),
            Some(nfstime4 {
                seconds: -2,
                nseconds: 750_000_000
            })
        );
        let t = UNIX_EPOCH + Duration::new(5_000_000_000, 7);
        assert_eq!(
            nfstime(t),
            Some(nfstime4 {
                seconds: 5_000_000_000,
                nseconds: 7
            })
        );
    }

    #[test]
    fn owners_are_sent_as_numbers_and_keep_leaves_times_unset() {
        let a = SetAttrs {
            uid: Some(1000),
            gid: Some(50),
            mode: Some(0o100_640),
            ..Default::default()
        };
        let f = to_fattr4(&a, "/x").unwrap();
        assert_eq!(f.owner.unwrap().as_bytes(), b"1000");
        assert_eq!(f.owner_group.unwrap().as_bytes(), b"50");
        assert_eq!(f.mode, Some(0o640));
        assert_eq!(f.time_access_set, None);
        assert_eq!(f.time_modify_set, None);
    }
}
