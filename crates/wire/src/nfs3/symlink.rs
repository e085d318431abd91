//! RFC 1813 §3.3.10 SYMLINK and §3.3.5 READLINK: a name created together
//! with its content in one request, and that content read back. The
//! SQLite VFS's lock file is a symbolic link for that reason: its owner
//! record exists from the instant the name does.

use super::attr::{post_op_attr, post_op_fh3, sattr3, wcc_data};
use super::result::Nfs3Res;
use super::types::{diropargs3, nfs_fh3, nfspath3, xdr_struct};
use super::{nfs3_procedure, NFSPROC3_READLINK, NFSPROC3_SYMLINK};

nfs3_procedure!(
    /// RFC 1813 §3.3.10 `SYMLINK3res NFSPROC3_SYMLINK(SYMLINK3args) = 10;`
    Symlink = NFSPROC3_SYMLINK, "SYMLINK", SYMLINK3args => SYMLINK3res
);
nfs3_procedure!(
    /// RFC 1813 §3.3.5 `READLINK3res NFSPROC3_READLINK(READLINK3args) = 5;`
    Readlink = NFSPROC3_READLINK, "READLINK", READLINK3args => READLINK3res
);

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
        /// Initial attributes of the link.
        pub symlink_attributes: sattr3,
        /// Its content (the "target"; any bytes but NUL, not interpreted
        /// by the server).
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
        /// Directory and name of the new link (`where` in the RFC).
        pub where_: diropargs3,
        /// Its attributes and content.
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
        /// The new link's handle, if the server sent it.
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
    /// RFC 1813 §3.3.5
    /// ```text
    /// struct READLINK3args {
    ///      nfs_fh3  symlink;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct READLINK3args {
        /// The link to read.
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
        /// Its content.
        pub data: nfspath3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.5
    /// ```text
    /// struct READLINK3resfail {
    ///      post_op_attr  symlink_attributes;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct READLINK3resfail {
        /// The object's attributes.
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
