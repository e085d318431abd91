//! RFC 1813 §3.3.2 SETATTR.

use super::attr::{sattr3, sattrguard3, wcc_data};
use super::result::Nfs3Res;
use super::types::{nfs_fh3, xdr_struct};
use super::{nfs3_procedure, NFSPROC3_SETATTR};

nfs3_procedure!(
    /// RFC 1813 §3.3.2 `SETATTR3res NFSPROC3_SETATTR(SETATTR3args) = 2;`
    Setattr = NFSPROC3_SETATTR, "SETATTR", SETATTR3args => SETATTR3res
);

xdr_struct!(
    /// RFC 1813 §3.3.2
    /// ```text
    /// struct SETATTR3args {
    ///      nfs_fh3      object;
    ///      sattr3       new_attributes;
    ///      sattrguard3  guard;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct SETATTR3args {
        /// The object to change.
        pub object: nfs_fh3,
        /// What to change.
        pub new_attributes: sattr3,
        /// If set, the server applies the change only if the object's ctime
        /// still equals this one.
        pub guard: sattrguard3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.2
    /// ```text
    /// struct SETATTR3resok {
    ///      wcc_data  obj_wcc;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct SETATTR3resok {
        /// Attributes before and after.
        pub obj_wcc: wcc_data,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.2
    /// ```text
    /// struct SETATTR3resfail {
    ///      wcc_data  obj_wcc;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct SETATTR3resfail {
        /// Attributes before and after.
        pub obj_wcc: wcc_data,
    }
);

/// RFC 1813 §3.3.2
/// ```text
/// union SETATTR3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      SETATTR3resok   resok;
/// default:
///      SETATTR3resfail resfail;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type SETATTR3res = Nfs3Res<SETATTR3resok, SETATTR3resfail>;
