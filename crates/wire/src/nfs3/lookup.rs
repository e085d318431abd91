//! RFC 1813 §3.3.3 LOOKUP.

use super::attr::post_op_attr;
use super::result::Nfs3Res;
use super::types::{diropargs3, nfs_fh3, xdr_struct};
use super::{nfs3_procedure, NFSPROC3_LOOKUP};

nfs3_procedure!(
    /// RFC 1813 §3.3.3 `LOOKUP3res NFSPROC3_LOOKUP(LOOKUP3args) = 3;`
    Lookup = NFSPROC3_LOOKUP, "LOOKUP", LOOKUP3args => LOOKUP3res
);

xdr_struct!(
    /// RFC 1813 §3.3.3
    /// ```text
    /// struct LOOKUP3args {
    ///      diropargs3  what;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct LOOKUP3args {
        /// Directory and name to look up.
        pub what: diropargs3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.3
    /// ```text
    /// struct LOOKUP3resok {
    ///      nfs_fh3      object;
    ///      post_op_attr obj_attributes;
    ///      post_op_attr dir_attributes;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct LOOKUP3resok {
        /// The handle of the object found.
        pub object: nfs_fh3,
        /// Its attributes.
        pub obj_attributes: post_op_attr,
        /// The directory's attributes.
        pub dir_attributes: post_op_attr,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.3
    /// ```text
    /// struct LOOKUP3resfail {
    ///      post_op_attr dir_attributes;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct LOOKUP3resfail {
        /// The directory's attributes.
        pub dir_attributes: post_op_attr,
    }
);

/// RFC 1813 §3.3.3
/// ```text
/// union LOOKUP3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      LOOKUP3resok    resok;
/// default:
///      LOOKUP3resfail  resfail;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type LOOKUP3res = Nfs3Res<LOOKUP3resok, LOOKUP3resfail>;
