//! NFS version 3 (RFC 1813), program 100003 version 3.
//!
//! Types keep their RFC names (`READ3args`, `nfsstat3::NFS3ERR_NOENT`) so
//! the code can be read side by side with the RFC and with `spec/nfs3.x`.
//! Every result is an [`Nfs3Res`]: the `resok` arm on `NFS3_OK`, the
//! `resfail` arm (with the status kept) on anything else, including status
//! values this crate does not know.
//!
//! Layout:
//! * [`types`]: `nfsstat3`, the small enums, handles, names, verifiers;
//! * [`attr`]: `fattr3`, `wcc_data`, `sattr3` and friends;
//! * one module per group of procedures: [`getattr`] (NULL, GETATTR),
//!   [`setattr`], [`lookup`], [`access`], [`io`] (READ, WRITE, COMMIT),
//!   [`namespace`] (CREATE, MKDIR, REMOVE, RMDIR, RENAME), [`links`]
//!   (READLINK, SYMLINK, LINK), [`dir`]
//!   (READDIR, READDIRPLUS), [`fs`] (FSSTAT, FSINFO, PATHCONF);
//! * [`hotpath`]: allocation-free encoders and borrowing decoders for the
//!   I/O driver (READ, WRITE, COMMIT, GETATTR).
//!
//! Not implemented: MKNOD (database files need no device nodes); its XDR
//! is in `spec/nfs3.x`.

// RFC 1813 names (`READ3args`, `nfs_fh3`) are kept so the code greps
// against the RFC.
#![allow(non_camel_case_types)]

pub mod access;
pub mod attr;
pub mod dir;
pub mod fs;
pub mod getattr;
pub mod hotpath;
pub mod io;
pub mod links;
pub mod lookup;
pub mod namespace;
pub mod result;
pub mod setattr;
pub mod types;

pub use access::*;
pub use attr::*;
pub use dir::*;
pub use fs::*;
pub use getattr::*;
pub use hotpath::*;
pub use io::*;
pub use links::*;
pub use lookup::*;
pub use namespace::*;
pub use result::Nfs3Res;
pub use setattr::*;
pub use types::*;

/// RFC 1813 `NFS_PROGRAM`.
pub const NFS_PROGRAM: u32 = 100003;
/// RFC 1813 `NFS_V3`.
pub const NFS_V3: u32 = 3;

/// RFC 1813 §3.3.0 `NFSPROC3_NULL`.
pub const NFSPROC3_NULL: u32 = 0;
/// RFC 1813 §3.3.1 `NFSPROC3_GETATTR`.
pub const NFSPROC3_GETATTR: u32 = 1;
/// RFC 1813 §3.3.2 `NFSPROC3_SETATTR`.
pub const NFSPROC3_SETATTR: u32 = 2;
/// RFC 1813 §3.3.3 `NFSPROC3_LOOKUP`.
pub const NFSPROC3_LOOKUP: u32 = 3;
/// RFC 1813 §3.3.4 `NFSPROC3_ACCESS`.
pub const NFSPROC3_ACCESS: u32 = 4;
/// RFC 1813 §3.3.5 `NFSPROC3_READLINK`.
pub const NFSPROC3_READLINK: u32 = 5;
/// RFC 1813 §3.3.6 `NFSPROC3_READ`.
pub const NFSPROC3_READ: u32 = 6;
/// RFC 1813 §3.3.7 `NFSPROC3_WRITE`.
pub const NFSPROC3_WRITE: u32 = 7;
/// RFC 1813 §3.3.8 `NFSPROC3_CREATE`.
pub const NFSPROC3_CREATE: u32 = 8;
/// RFC 1813 §3.3.9 `NFSPROC3_MKDIR`.
pub const NFSPROC3_MKDIR: u32 = 9;
/// RFC 1813 §3.3.10 `NFSPROC3_SYMLINK`.
pub const NFSPROC3_SYMLINK: u32 = 10;
/// RFC 1813 §3.3.11 `NFSPROC3_MKNOD` (not implemented here).
pub const NFSPROC3_MKNOD: u32 = 11;
/// RFC 1813 §3.3.12 `NFSPROC3_REMOVE`.
pub const NFSPROC3_REMOVE: u32 = 12;
/// RFC 1813 §3.3.13 `NFSPROC3_RMDIR`.
pub const NFSPROC3_RMDIR: u32 = 13;
/// RFC 1813 §3.3.14 `NFSPROC3_RENAME`.
pub const NFSPROC3_RENAME: u32 = 14;
/// RFC 1813 §3.3.15 `NFSPROC3_LINK`.
pub const NFSPROC3_LINK: u32 = 15;
/// RFC 1813 §3.3.16 `NFSPROC3_READDIR`.
pub const NFSPROC3_READDIR: u32 = 16;
/// RFC 1813 §3.3.17 `NFSPROC3_READDIRPLUS`.
pub const NFSPROC3_READDIRPLUS: u32 = 17;
/// RFC 1813 §3.3.18 `NFSPROC3_FSSTAT`.
pub const NFSPROC3_FSSTAT: u32 = 18;
/// RFC 1813 §3.3.19 `NFSPROC3_FSINFO`.
pub const NFSPROC3_FSINFO: u32 = 19;
/// RFC 1813 §3.3.20 `NFSPROC3_PATHCONF`.
pub const NFSPROC3_PATHCONF: u32 = 20;
/// RFC 1813 §3.3.21 `NFSPROC3_COMMIT`.
pub const NFSPROC3_COMMIT: u32 = 21;

/// Number of NFSv3 procedures (NULL = 0 ..= COMMIT = 21).
pub const NFSPROC3_COUNT: usize = 22;

/// The name of every NFSv3 procedure, indexed by its number (RFC 1813
/// §3.3, without the `NFSPROC3_` prefix): the `NAME` of its
/// [`Procedure`](crate::Procedure) marker, and what statistics call it.
pub const NFSPROC3_NAMES: [&str; NFSPROC3_COUNT] = [
    "NULL",
    "GETATTR",
    "SETATTR",
    "LOOKUP",
    "ACCESS",
    "READLINK",
    "READ",
    "WRITE",
    "CREATE",
    "MKDIR",
    "SYMLINK",
    "MKNOD",
    "REMOVE",
    "RMDIR",
    "RENAME",
    "LINK",
    "READDIR",
    "READDIRPLUS",
    "FSSTAT",
    "FSINFO",
    "PATHCONF",
    "COMMIT",
];

/// The name of NFSv3 procedure `proc_` (`"READ"`), `None` above COMMIT.
pub fn procedure_name(proc_: u32) -> Option<&'static str> {
    NFSPROC3_NAMES.get(proc_ as usize).copied()
}

/// Declares a marker type for one NFSv3 procedure and its
/// [`Procedure`](crate::Procedure) impl.
macro_rules! nfs3_procedure {
    ($(#[$m:meta])* $name:ident = $proc:expr, $rfc:literal, $args:ty => $res:ty) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct $name;
        impl $crate::Procedure for $name {
            const PROG: u32 = $crate::nfs3::NFS_PROGRAM;
            const VERS: u32 = $crate::nfs3::NFS_V3;
            const PROC: u32 = $proc;
            const NAME: &'static str = $rfc;
            type Args = $args;
            type Res = $res;
        }
    };
}
use nfs3_procedure;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Procedure;

    fn named<P: Procedure>() -> (u32, &'static str) {
        (P::PROC, P::NAME)
    }

    #[test]
    fn every_procedure_is_named_by_its_number() {
        let all = [
            named::<Null>(),
            named::<Getattr>(),
            named::<Setattr>(),
            named::<Lookup>(),
            named::<Access>(),
            named::<Read>(),
            named::<Write>(),
            named::<Create>(),
            named::<Mkdir>(),
            named::<Remove>(),
            named::<Rmdir>(),
            named::<Rename>(),
            named::<Readdir>(),
            named::<Readdirplus>(),
            named::<Fsstat>(),
            named::<Fsinfo>(),
            named::<Pathconf>(),
            named::<Commit>(),
        ];
        for (proc_, name) in all {
            assert_eq!(procedure_name(proc_), Some(name));
        }
        assert_eq!(procedure_name(NFSPROC3_COMMIT + 1), None);
    }
}
