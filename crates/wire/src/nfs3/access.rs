//! RFC 1813 §3.3.4 ACCESS.

use super::attr::post_op_attr;
use super::result::Nfs3Res;
use super::types::{nfs_fh3, xdr_struct};
use super::{nfs3_procedure, NFSPROC3_ACCESS};

/// RFC 1813 §3.3.4 `ACCESS3_READ`: read data or list a directory.
pub const ACCESS3_READ: u32 = 0x0001;
/// RFC 1813 §3.3.4 `ACCESS3_LOOKUP`: look up a name in a directory.
pub const ACCESS3_LOOKUP: u32 = 0x0002;
/// RFC 1813 §3.3.4 `ACCESS3_MODIFY`: rewrite data or change a directory.
pub const ACCESS3_MODIFY: u32 = 0x0004;
/// RFC 1813 §3.3.4 `ACCESS3_EXTEND`: write new data or add entries.
pub const ACCESS3_EXTEND: u32 = 0x0008;
/// RFC 1813 §3.3.4 `ACCESS3_DELETE`: delete an entry in a directory.
pub const ACCESS3_DELETE: u32 = 0x0010;
/// RFC 1813 §3.3.4 `ACCESS3_EXECUTE`: execute a file.
pub const ACCESS3_EXECUTE: u32 = 0x0020;

nfs3_procedure!(
    /// RFC 1813 §3.3.4 `ACCESS3res NFSPROC3_ACCESS(ACCESS3args) = 4;`
    Access = NFSPROC3_ACCESS, "ACCESS", ACCESS3args => ACCESS3res
);

xdr_struct!(
    /// RFC 1813 §3.3.4
    /// ```text
    /// struct ACCESS3args {
    ///      nfs_fh3  object;
    ///      uint32   access;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct ACCESS3args {
        /// The object.
        pub object: nfs_fh3,
        /// `ACCESS3_*` bits to check.
        pub access: u32,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.4
    /// ```text
    /// struct ACCESS3resok {
    ///      post_op_attr   obj_attributes;
    ///      uint32         access;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct ACCESS3resok {
        /// The object's attributes.
        pub obj_attributes: post_op_attr,
        /// The `ACCESS3_*` bits granted.
        pub access: u32,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.4
    /// ```text
    /// struct ACCESS3resfail {
    ///      post_op_attr   obj_attributes;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct ACCESS3resfail {
        /// The object's attributes.
        pub obj_attributes: post_op_attr,
    }
);

/// RFC 1813 §3.3.4
/// ```text
/// union ACCESS3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      ACCESS3resok   resok;
/// default:
///      ACCESS3resfail resfail;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type ACCESS3res = Nfs3Res<ACCESS3resok, ACCESS3resfail>;
