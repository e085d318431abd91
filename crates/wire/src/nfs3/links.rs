//! RFC 1813 §3.3.5 READLINK, §3.3.10 SYMLINK and §3.3.15 LINK: symbolic
//! and hard links, which the interception library serves for programs
//! (`ln`, `tar`, PostgreSQL's tablespace links).

use super::attr::{post_op_attr, post_op_fh3, sattr3, wcc_data};
use super::result::Nfs3Res;
use super::types::{diropargs3, nfs_fh3, nfspath3, xdr_struct};
use super::{nfs3_procedure, NFSPROC3_LINK, NFSPROC3_READLINK, NFSPROC3_SYMLINK};

nfs3_procedure!(
    /// RFC 1813 §3.3.5 `READLINK3res NFSPROC3_READLINK(READLINK3args) = 5;`
    Readlink = NFSPROC3_READLINK, "READLINK", READLINK3args => READLINK3res
);
nfs3_procedure!(
    /// RFC 1813 §3.3.10 `SYMLINK3res NFSPROC3_SYMLINK(SYMLINK3args) = 10;`
    Symlink = NFSPROC3_SYMLINK, "SYMLINK", SYMLINK3args => SYMLINK3res
);
nfs3_procedure!(
    /// RFC 1813 §3.3.15 `LINK3res NFSPROC3_LINK(LINK3args) = 15;`
    Link = NFSPROC3_LINK, "LINK", LINK3args => LINK3res
);

xdr_struct!(
    /// RFC 1813 §3.3.5
    /// ```text
    /// struct READLINK3args {
    ///      nfs_fh3  symlink;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct READLINK3args {
        /// The symbolic link.
        pub symlink: nfs_fh3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.5
    /// ```text
    /// struct READLINK3resok {
    ///      post_op_attr   symlink_attributes;
    ///      nfspath3       data;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct READLINK3resok {
        /// The link's attributes.
        pub symlink_attributes: post_op_attr,
        /// The link's target, as stored (bounded by `MAX_PATH_LEN`).
        pub data: nfspath3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.5
    /// ```text
    /// struct READLINK3resfail {
    ///      post_op_attr   symlink_attributes;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct READLINK3resfail {
        /// The link's attributes.
        pub symlink_attributes: post_op_attr,
    }
);

/// RFC 1813 §3.3.5
/// ```text
/// union READLINK3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      READLINK3resok   resok;
/// default:
///      READLINK3resfail resfail;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type READLINK3res = Nfs3Res<READLINK3resok, READLINK3resfail>;

xdr_struct!(
    /// RFC 1813 §3.3.10
    /// ```text
    /// struct symlinkdata3 {
    ///      sattr3    symlink_attributes;
    ///      nfspath3  symlink_data;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct symlinkdata3 {
        /// Attributes of the new link.
        pub symlink_attributes: sattr3,
        /// Its target.
        pub symlink_data: nfspath3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.10
    /// ```text
    /// struct SYMLINK3args {
    ///      diropargs3    where;
    ///      symlinkdata3  symlink;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct SYMLINK3args {
        /// Directory and name of the new link (`where`).
        pub where_: diropargs3,
        /// Its attributes and target.
        pub symlink: symlinkdata3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.10
    /// ```text
    /// struct SYMLINK3resok {
    ///      post_op_fh3   obj;
    ///      post_op_attr  obj_attributes;
    ///      wcc_data      dir_wcc;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct SYMLINK3resok {
        /// The new link's handle, if sent.
        pub obj: post_op_fh3,
        /// Its attributes.
        pub obj_attributes: post_op_attr,
        /// The directory's attributes before and after.
        pub dir_wcc: wcc_data,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.10
    /// ```text
    /// struct SYMLINK3resfail {
    ///      wcc_data      dir_wcc;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct SYMLINK3resfail {
        /// The directory's attributes before and after.
        pub dir_wcc: wcc_data,
    }
);

/// RFC 1813 §3.3.10
/// ```text
/// union SYMLINK3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      SYMLINK3resok   resok;
/// default:
///      SYMLINK3resfail resfail;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type SYMLINK3res = Nfs3Res<SYMLINK3resok, SYMLINK3resfail>;

xdr_struct!(
    /// RFC 1813 §3.3.15
    /// ```text
    /// struct LINK3args {
    ///      nfs_fh3     file;
    ///      diropargs3  link;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct LINK3args {
        /// The existing file.
        pub file: nfs_fh3,
        /// Directory and name of the new link.
        pub link: diropargs3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.15
    /// ```text
    /// struct LINK3resok {
    ///      post_op_attr   file_attributes;
    ///      wcc_data       linkdir_wcc;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct LINK3resok {
        /// The file's attributes (its link count changed).
        pub file_attributes: post_op_attr,
        /// The directory's attributes before and after.
        pub linkdir_wcc: wcc_data,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.15
    /// ```text
    /// struct LINK3resfail {
    ///      post_op_attr   file_attributes;
    ///      wcc_data       linkdir_wcc;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct LINK3resfail {
        /// The file's attributes.
        pub file_attributes: post_op_attr,
        /// The directory's attributes before and after.
        pub linkdir_wcc: wcc_data,
    }
);

/// RFC 1813 §3.3.15
/// ```text
/// union LINK3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      LINK3resok   resok;
/// default:
///      LINK3resfail resfail;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type LINK3res = Nfs3Res<LINK3resok, LINK3resfail>;
