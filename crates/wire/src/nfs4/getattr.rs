//! RFC 8881 §18.7 GETATTR, §18.30 SETATTR and §18.1 ACCESS.

use super::attr::fattr4;
use super::result::Nfs4Res;
use super::types::{bitmap4, nfsstat4, stateid4};
use crate::nfs3::types::xdr_struct;

xdr_struct!(
    /// RFC 8881 §18.7.1
    /// ```text
    /// struct GETATTR4args {
    ///         /* CURRENT_FH: object */
    ///         bitmap4         attr_request;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct GETATTR4args {
        /// The attributes wanted (`FATTR4_*` bits).
        pub attr_request: bitmap4,
    }
);

xdr_struct!(
    /// RFC 8881 §18.7.2
    /// ```text
    /// struct GETATTR4resok {
    ///         fattr4          obj_attributes;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct GETATTR4resok {
        /// The attributes the server has of those asked for.
        pub obj_attributes: fattr4,
    }
);

/// RFC 8881 §18.7.2
/// ```text
/// union GETATTR4res switch (nfsstat4 status) {
///  case NFS4_OK:
///          GETATTR4resok  resok4;
///  default:
///          void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type GETATTR4res = Nfs4Res<GETATTR4resok>;

xdr_struct!(
    /// RFC 8881 §18.30.1
    /// ```text
    /// struct SETATTR4args {
    ///         /* CURRENT_FH: target object */
    ///         stateid4        stateid;
    ///         fattr4          obj_attributes;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct SETATTR4args {
        /// An open or lock stateid when `size` changes (truncation is a
        /// write), else the anonymous stateid.
        pub stateid: stateid4,
        /// The attributes to set.
        pub obj_attributes: fattr4,
    }
);

xdr_struct!(
    /// RFC 8881 §18.30.2: a struct, not a union: `attrsset` comes with
    /// every status (empty on failure).
    /// ```text
    /// struct SETATTR4res {
    ///         nfsstat4        status;
    ///         bitmap4         attrsset;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct SETATTR4res {
        /// The status.
        pub status: nfsstat4,
        /// The attributes that were set.
        pub attrsset: bitmap4,
    }
);

/// RFC 8881 §18.1.1 `ACCESS4_READ`.
pub const ACCESS4_READ: u32 = 0x0000_0001;
/// RFC 8881 §18.1.1 `ACCESS4_LOOKUP`.
pub const ACCESS4_LOOKUP: u32 = 0x0000_0002;
/// RFC 8881 §18.1.1 `ACCESS4_MODIFY`.
pub const ACCESS4_MODIFY: u32 = 0x0000_0004;
/// RFC 8881 §18.1.1 `ACCESS4_EXTEND`.
pub const ACCESS4_EXTEND: u32 = 0x0000_0008;
/// RFC 8881 §18.1.1 `ACCESS4_DELETE`.
pub const ACCESS4_DELETE: u32 = 0x0000_0010;
/// RFC 8881 §18.1.1 `ACCESS4_EXECUTE`.
pub const ACCESS4_EXECUTE: u32 = 0x0000_0020;

xdr_struct!(
    /// RFC 8881 §18.1.1
    /// ```text
    /// struct ACCESS4args {
    ///         /* CURRENT_FH: object */
    ///         uint32_t        access;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct ACCESS4args {
        /// `ACCESS4_*` bits to check.
        pub access: u32,
    }
);

xdr_struct!(
    /// RFC 8881 §18.1.2
    /// ```text
    /// struct ACCESS4resok {
    ///         uint32_t        supported;
    ///         uint32_t        access;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct ACCESS4resok {
        /// The bits the server could check.
        pub supported: u32,
        /// The bits granted.
        pub access: u32,
    }
);

/// RFC 8881 §18.1.2
/// ```text
/// union ACCESS4res switch (nfsstat4 status) {
///  case NFS4_OK:
///          ACCESS4resok   resok4;
///  default:
///          void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type ACCESS4res = Nfs4Res<ACCESS4resok>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xdr::{decode_exact, to_bytes, Decode, XdrReader};

    #[test]
    fn setattr_result_carries_attrsset_with_a_failure_too() {
        let r = SETATTR4res {
            status: nfsstat4::NFS4ERR_PERM,
            attrsset: bitmap4::EMPTY,
        };
        let b = to_bytes(&r);
        assert_eq!(b, [0, 0, 0, 1, 0, 0, 0, 0]);
        assert_eq!(decode_exact::<SETATTR4res>(&b, "s").unwrap(), r);
        // Not a union: the bitmap must be there even on failure.
        assert!(decode_exact::<SETATTR4res>(&b[..4], "s").is_err());
    }

    #[test]
    fn getattr_failure_has_no_body() {
        let r: GETATTR4res = Nfs4Res::Fail(nfsstat4::NFS4ERR_STALE);
        assert_eq!(to_bytes(&r), [0, 0, 0, 70]);
        let mut rd = XdrReader::new(&[0, 0, 0, 70]);
        assert_eq!(GETATTR4res::decode(&mut rd).unwrap(), r);
    }
}
