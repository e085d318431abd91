//! MOUNT version 3 (RFC 1813 appendix I §5), program 100005: getting the
//! root file handle of an export (MNT), telling the server we are done
//! (UMNT), and listing exports (EXPORT). DUMP and UMNTALL are not
//! implemented; all of it is in `spec/mount.x`.
//!
//! The export list is an XDR linked list of linked lists; both levels are
//! decoded iteratively and capped ([`MAX_EXPORTS`], [`MAX_GROUPS`]).

// RFC names (`mountres3`, `fhandle3`) are kept so the code greps against
// the RFC.
#![allow(non_camel_case_types)]

use crate::nfs3::types::{bounded_string, decode_list, encode_list, nfs_fh3};
use crate::wire_enum;
use crate::xdr::{Decode, DecodeError, Encode, XdrReader, XdrWrite};

/// RFC 1813 §5.1 `MOUNT_PROGRAM`.
pub const MOUNT_PROGRAM: u32 = 100005;
/// RFC 1813 §5.1 `MOUNT_V3`.
pub const MOUNT_V3: u32 = 3;
/// RFC 1813 §5.1 `MNTPATHLEN`: longest `dirpath`.
pub const MNTPATHLEN: usize = 1024;
/// RFC 1813 §5.1 `MNTNAMLEN`: longest `name`.
pub const MNTNAMLEN: usize = 255;
/// RFC 1813 §5.1 `FHSIZE3`: longest `fhandle3`.
pub const FHSIZE3: usize = 64;
/// Most exports accepted in one EXPORT reply (`DecodeError::TooLong`
/// beyond).
pub const MAX_EXPORTS: usize = 4096;
/// Most groups accepted for one export.
pub const MAX_GROUPS: usize = 256;
/// Most auth flavors accepted in a MNT reply (the RFC leaves
/// `int auth_flavors<>` unbounded; a handful exist).
pub const MAX_AUTH_FLAVORS: usize = 64;

/// RFC 1813 §5.2.0 `MOUNTPROC3_NULL`.
pub const MOUNTPROC3_NULL: u32 = 0;
/// RFC 1813 §5.2.1 `MOUNTPROC3_MNT`.
pub const MOUNTPROC3_MNT: u32 = 1;
/// RFC 1813 §5.2.2 `MOUNTPROC3_DUMP` (not implemented here).
pub const MOUNTPROC3_DUMP: u32 = 2;
/// RFC 1813 §5.2.3 `MOUNTPROC3_UMNT`.
pub const MOUNTPROC3_UMNT: u32 = 3;
/// RFC 1813 §5.2.4 `MOUNTPROC3_UMNTALL` (not implemented here).
pub const MOUNTPROC3_UMNTALL: u32 = 4;
/// RFC 1813 §5.2.5 `MOUNTPROC3_EXPORT`.
pub const MOUNTPROC3_EXPORT: u32 = 5;

bounded_string!(
    /// RFC 1813 §5.1 `typedef string dirpath<MNTPATHLEN>;`
    dirpath,
    MNTPATHLEN
);
bounded_string!(
    /// RFC 1813 §5.1 `typedef string name<MNTNAMLEN>;` — renamed: a type
    /// called `name` turns every `name` binding in a module that imports it
    /// into a pattern.
    mntname,
    MNTNAMLEN
);

/// RFC 1813 §5.1 `typedef opaque fhandle3<FHSIZE3>;` — the same bytes as
/// an NFSv3 `nfs_fh3`, so it shares the type (a longer one is rejected on
/// decode with `TooLong { what: "fhandle3", .. }`).
pub type fhandle3 = nfs_fh3;

wire_enum!(
    /// RFC 1813 §5.1
    /// ```text
    /// enum mountstat3 {
    ///    MNT3_OK = 0,                 /* no error */
    ///    MNT3ERR_PERM = 1,            /* Not owner */
    ///    MNT3ERR_NOENT = 2,           /* No such file or directory */
    ///    MNT3ERR_IO = 5,              /* I/O error */
    ///    MNT3ERR_ACCES = 13,          /* Permission denied */
    ///    MNT3ERR_NOTDIR = 20,         /* Not a directory */
    ///    MNT3ERR_INVAL = 22,          /* Invalid argument */
    ///    MNT3ERR_NAMETOOLONG = 63,    /* Filename too long */
    ///    MNT3ERR_NOTSUPP = 10004,     /* Operation not supported */
    ///    MNT3ERR_SERVERFAULT = 10006  /* A failure on the server */
    /// };
    /// ```
    mountstat3 {
        MNT3_OK = 0,
        MNT3ERR_PERM = 1,
        MNT3ERR_NOENT = 2,
        MNT3ERR_IO = 5,
        MNT3ERR_ACCES = 13,
        MNT3ERR_NOTDIR = 20,
        MNT3ERR_INVAL = 22,
        MNT3ERR_NAMETOOLONG = 63,
        MNT3ERR_NOTSUPP = 10004,
        MNT3ERR_SERVERFAULT = 10006,
    }
);

/// RFC 1813 §5.2.1
/// ```text
/// struct mountres3_ok {
///      fhandle3   fhandle;
///      int        auth_flavors<>;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct mountres3_ok {
    /// The root file handle of the export.
    pub fhandle: fhandle3,
    /// Auth flavors the server accepts for it, in its order of preference
    /// (at most [`MAX_AUTH_FLAVORS`] are accepted on decode).
    pub auth_flavors: Vec<i32>,
}

impl Encode for mountres3_ok {
    fn encode(&self, out: &mut Vec<u8>) {
        self.fhandle.encode(out);
        out.put_u32(self.auth_flavors.len() as u32);
        for f in &self.auth_flavors {
            out.put_u32(*f as u32);
        }
    }
}
impl Decode for mountres3_ok {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        let fhandle = nfs_fh3::decode_named(r, "fhandle3")?;
        let n = r.array_len(MAX_AUTH_FLAVORS, 4, "auth_flavors")?;
        let mut auth_flavors = Vec::with_capacity(n);
        for _ in 0..n {
            auth_flavors.push(r.i32("auth_flavors")?);
        }
        Ok(Self {
            fhandle,
            auth_flavors,
        })
    }
}

/// RFC 1813 §5.2.1
/// ```text
/// union mountres3 switch (mountstat3 fhs_status) {
/// case MNT3_OK:
///      mountres3_ok  mountinfo;
/// default:
///      void;
/// };
/// ```
/// Any status other than `MNT3_OK`, known or not, decodes as `Err`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum mountres3 {
    /// `MNT3_OK` with the handle.
    Ok(mountres3_ok),
    /// Any other status (never `MNT3_OK`).
    Err(mountstat3),
}

impl mountres3 {
    /// The status on the wire.
    pub fn status(&self) -> mountstat3 {
        match self {
            mountres3::Ok(_) => mountstat3::MNT3_OK,
            mountres3::Err(s) => *s,
        }
    }
}

impl Encode for mountres3 {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            mountres3::Ok(ok) => {
                mountstat3::MNT3_OK.encode(out);
                ok.encode(out);
            }
            mountres3::Err(s) => {
                debug_assert!(*s != mountstat3::MNT3_OK, "mountres3::Err(MNT3_OK)");
                s.encode(out);
            }
        }
    }
}
impl Decode for mountres3 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        match mountstat3::decode(r)? {
            mountstat3::MNT3_OK => Ok(mountres3::Ok(mountres3_ok::decode(r)?)),
            other => Ok(mountres3::Err(other)),
        }
    }
}

/// RFC 1813 §5.2.5 (the `gr_next` link is the position in the vector)
/// ```text
/// typedef struct groupnode *groups;
/// struct groupnode {
///      name     gr_name;
///      groups   gr_next;
/// };
/// ```
pub type groups = Vec<mntname>;

/// RFC 1813 §5.2.5 (the `ex_next` link is the position in [`exports`])
/// ```text
/// struct exportnode {
///      dirpath  ex_dir;
///      groups   ex_groups;
///      exports  ex_next;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct exportnode {
    /// The exported path.
    pub ex_dir: dirpath,
    /// Hosts or groups allowed to mount it (empty: everyone); at most
    /// [`MAX_GROUPS`] on decode.
    pub ex_groups: groups,
}

impl Encode for exportnode {
    fn encode(&self, out: &mut Vec<u8>) {
        self.ex_dir.encode(out);
        encode_list(&self.ex_groups, out);
    }
}
impl Decode for exportnode {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            ex_dir: dirpath::decode(r)?,
            ex_groups: decode_list(r, MAX_GROUPS, "groupnode")?,
        })
    }
}

/// RFC 1813 §5.2.5
/// ```text
/// typedef struct exportnode *exports;
/// exports MOUNTPROC3_EXPORT(void) = 5;
/// ```
/// At most [`MAX_EXPORTS`] entries on decode.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct exports(pub Vec<exportnode>);

impl Encode for exports {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_list(&self.0, out);
    }
}
impl Decode for exports {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(exports(decode_list(r, MAX_EXPORTS, "exportnode")?))
    }
}

/// Declares a marker type for one MOUNT v3 procedure.
macro_rules! mount_procedure {
    ($(#[$m:meta])* $name:ident = $proc:expr, $rfc:literal, $args:ty => $res:ty) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct $name;
        impl crate::Procedure for $name {
            const PROG: u32 = MOUNT_PROGRAM;
            const VERS: u32 = MOUNT_V3;
            const PROC: u32 = $proc;
            const NAME: &'static str = $rfc;
            type Args = $args;
            type Res = $res;
        }
    };
}

mount_procedure!(
    /// RFC 1813 §5.2.0 `void MOUNTPROC3_NULL(void) = 0;`
    Null = MOUNTPROC3_NULL, "MOUNT NULL", () => ()
);
mount_procedure!(
    /// RFC 1813 §5.2.1 `mountres3 MOUNTPROC3_MNT(dirpath) = 1;`
    Mnt = MOUNTPROC3_MNT, "MNT", dirpath => mountres3
);
mount_procedure!(
    /// RFC 1813 §5.2.3 `void MOUNTPROC3_UMNT(dirpath) = 3;`
    Umnt = MOUNTPROC3_UMNT, "UMNT", dirpath => ()
);
mount_procedure!(
    /// RFC 1813 §5.2.5 `exports MOUNTPROC3_EXPORT(void) = 5;`
    Export = MOUNTPROC3_EXPORT, "EXPORT", () => exports
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xdr::{decode_exact, to_bytes};

    #[test]
    fn rejects_mount_fhandle_longer_than_64() {
        let mut v = Vec::new();
        v.put_u32(0);
        v.put_opaque(&[0u8; 65]);
        v.put_u32(0);
        assert!(matches!(
            decode_exact::<mountres3>(&v, "mountres3"),
            Err(DecodeError::TooLong {
                what: "fhandle3",
                len: 65,
                max: 64
            })
        ));
    }

    #[test]
    fn unknown_mountstat_decodes_as_failure() {
        let v = [0, 0, 0x30, 0x39];
        let res: mountres3 = decode_exact(&v, "mountres3").unwrap();
        assert_eq!(res, mountres3::Err(mountstat3(12345)));
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: very large input")]
    fn export_list_longer_than_cap_is_too_long() {
        let list = exports(vec![exportnode::default(); MAX_EXPORTS + 1]);
        let err = decode_exact::<exports>(&to_bytes(&list), "exports").unwrap_err();
        assert!(matches!(
            err,
            DecodeError::TooLong {
                what: "exportnode",
                ..
            }
        ));
    }

    #[test]
    fn group_list_longer_than_cap_is_too_long() {
        let node = exportnode {
            ex_dir: "/x".into(),
            ex_groups: vec![mntname::from("g"); MAX_GROUPS + 1],
        };
        let err = decode_exact::<exports>(&to_bytes(&exports(vec![node])), "e").unwrap_err();
        assert!(matches!(
            err,
            DecodeError::TooLong {
                what: "groupnode",
                ..
            }
        ));
    }
}
