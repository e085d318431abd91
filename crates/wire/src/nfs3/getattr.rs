//! RFC 1813 §3.3.0 NULL and §3.3.1 GETATTR.

use super::attr::fattr3;
use super::result::Nfs3Res;
use super::types::{nfs_fh3, xdr_struct};
use super::{nfs3_procedure, NFSPROC3_GETATTR, NFSPROC3_NULL};

nfs3_procedure!(
    /// RFC 1813 §3.3.0 `void NFSPROC3_NULL(void) = 0;`
    Null = NFSPROC3_NULL, "NULL", () => ()
);

nfs3_procedure!(
    /// RFC 1813 §3.3.1 `GETATTR3res NFSPROC3_GETATTR(GETATTR3args) = 1;`
    Getattr = NFSPROC3_GETATTR, "GETATTR", GETATTR3args => GETATTR3res
);

xdr_struct!(
    /// RFC 1813 §3.3.1
    /// ```text
    /// struct GETATTR3args {
    ///      nfs_fh3  object;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct GETATTR3args {
        /// The object whose attributes are wanted.
        pub object: nfs_fh3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.1
    /// ```text
    /// struct GETATTR3resok {
    ///      fattr3   obj_attributes;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct GETATTR3resok {
        /// The attributes.
        pub obj_attributes: fattr3,
    }
);

/// RFC 1813 §3.3.1
/// ```text
/// union GETATTR3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      GETATTR3resok  resok;
/// default:
///      void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type GETATTR3res = Nfs3Res<GETATTR3resok, ()>;
