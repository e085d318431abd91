//! The current and saved file handles of a COMPOUND (RFC 8881 §16.2.3)
//! and how to find objects: PUTROOTFH, PUTFH, GETFH, LOOKUP, LOOKUPP,
//! SAVEFH, RESTOREFH, SECINFO and SECINFO_NO_NAME.

use super::result::Nfs4Res;
use super::session::rpc_gss_svc_t;
use super::types::{
    component4, decode_array, encode_array, nfs_fh4, nfsstat4, sec_oid4, MAX_SMALL_ARRAY,
};
use crate::nfs3::types::xdr_struct;
use crate::wire_enum;
use crate::xdr::{Decode, DecodeError, Encode, XdrReader, XdrWrite};

/// RFC 8881 §18.21.2 `struct PUTROOTFH4res { nfsstat4 status; };`
/// (PUTROOTFH has no arguments: the current handle becomes the root of
/// the server's pseudo file system.)
#[allow(non_camel_case_types)]
pub type PUTROOTFH4res = nfsstat4;

xdr_struct!(
    /// RFC 8881 §18.19.1
    /// ```text
    /// struct PUTFH4args {
    ///         nfs_fh4         object;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct PUTFH4args {
        /// The new current file handle.
        pub object: nfs_fh4,
    }
);

/// RFC 8881 §18.19.2 `struct PUTFH4res { nfsstat4 status; };`
#[allow(non_camel_case_types)]
pub type PUTFH4res = nfsstat4;

xdr_struct!(
    /// RFC 8881 §18.8.2
    /// ```text
    /// struct GETFH4resok {
    ///         nfs_fh4         object;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct GETFH4resok {
        /// The current file handle.
        pub object: nfs_fh4,
    }
);

/// RFC 8881 §18.8.2
/// ```text
/// union GETFH4res switch (nfsstat4 status) {
///  case NFS4_OK:
///         GETFH4resok     resok4;
///  default:
///         void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type GETFH4res = Nfs4Res<GETFH4resok>;

xdr_struct!(
    /// RFC 8881 §18.13.1
    /// ```text
    /// struct LOOKUP4args {
    ///         /* CURRENT_FH: directory */
    ///         component4      objname;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    pub struct LOOKUP4args {
        /// The name to look up in the current directory.
        pub objname: component4,
    }
);

/// RFC 8881 §18.13.2 `struct LOOKUP4res { nfsstat4 status; };` (new
/// current handle: the object)
#[allow(non_camel_case_types)]
pub type LOOKUP4res = nfsstat4;

/// RFC 8881 §18.14.2 `struct LOOKUPP4res { nfsstat4 status; };` (no
/// arguments; new current handle: the parent directory)
#[allow(non_camel_case_types)]
pub type LOOKUPP4res = nfsstat4;

/// RFC 8881 §18.28.2 `struct SAVEFH4res { nfsstat4 status; };` (no
/// arguments; the saved handle becomes the current one: RENAME and LINK
/// take their source from it)
#[allow(non_camel_case_types)]
pub type SAVEFH4res = nfsstat4;

/// RFC 8881 §18.27.2 `struct RESTOREFH4res { nfsstat4 status; };`
#[allow(non_camel_case_types)]
pub type RESTOREFH4res = nfsstat4;

wire_enum!(
    /// RFC 8881 §18.45.1
    /// ```text
    /// enum secinfo_style4 {
    ///         SECINFO_STYLE4_CURRENT_FH       = 0,
    ///         SECINFO_STYLE4_PARENT           = 1
    /// };
    /// ```
    secinfo_style4 {
        SECINFO_STYLE4_CURRENT_FH = 0,
        SECINFO_STYLE4_PARENT = 1,
    }
);

xdr_struct!(
    /// RFC 8881 §18.29.1
    /// ```text
    /// struct SECINFO4args {
    ///         /* CURRENT_FH: directory */
    ///         component4     name;
    /// };
    /// ```
    /// The flavors that `name` in the current directory takes: what a
    /// client asks after NFS4ERR_WRONGSEC on a LOOKUP of it (§2.6.3.1).
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    pub struct SECINFO4args {
        /// The name in the current directory.
        pub name: component4,
    }
);

/// RFC 8881 §18.29.2 `union SECINFO4res switch (nfsstat4 status) { case
/// NFS4_OK: SECINFO4resok resok4; default: void; };` (the current handle
/// is consumed: none after it)
pub type SECINFO4res = Nfs4Res<SECINFO4resok>;

/// RFC 8881 §18.45.1 `typedef secinfo_style4 SECINFO_NO_NAME4args;`
#[allow(non_camel_case_types)]
pub type SECINFO_NO_NAME4args = secinfo_style4;

xdr_struct!(
    /// RFC 8881 §18.29.2
    /// ```text
    /// struct rpcsec_gss_info {
    ///         sec_oid4        oid;
    ///         qop4            qop;
    ///         rpc_gss_svc_t   service;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct rpcsec_gss_info {
        /// The GSS mechanism.
        pub oid: sec_oid4,
        /// Quality of protection.
        pub qop: u32,
        /// Protection service.
        pub service: rpc_gss_svc_t,
    }
);

/// RFC 8881 §18.29.2
/// ```text
/// /* RPCSEC_GSS has a value of '6' - See RFC 2203 */
/// union secinfo4 switch (uint32_t flavor) {
///  case RPCSEC_GSS:
///          rpcsec_gss_info        flavor_info;
///  default:
///          void;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum secinfo4 {
    /// `RPCSEC_GSS` with its parameters.
    RPCSEC_GSS(rpcsec_gss_info),
    /// Any other flavor (AUTH_SYS = 1, AUTH_NONE = 0, ...): just its number.
    Flavor(u32),
}

/// RFC 2203 `RPCSEC_GSS`.
const RPCSEC_GSS: u32 = 6;

impl Encode for secinfo4 {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            secinfo4::RPCSEC_GSS(info) => {
                out.put_u32(RPCSEC_GSS);
                info.encode(out);
            }
            secinfo4::Flavor(f) => {
                debug_assert_ne!(*f, RPCSEC_GSS);
                out.put_u32(*f);
            }
        }
    }
}
impl Decode for secinfo4 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        match r.u32("secinfo4 flavor")? {
            RPCSEC_GSS => Ok(secinfo4::RPCSEC_GSS(rpcsec_gss_info::decode(r)?)),
            f => Ok(secinfo4::Flavor(f)),
        }
    }
}

/// RFC 8881 §18.29.2 `typedef secinfo4 SECINFO4resok<>;`: the flavors
/// the server accepts, in its order of preference (at most
/// [`MAX_SMALL_ARRAY`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct SECINFO4resok(pub Vec<secinfo4>);

impl Encode for SECINFO4resok {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_array(&self.0, out);
    }
}
impl Decode for SECINFO4resok {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self(decode_array(r, MAX_SMALL_ARRAY, 4, "SECINFO4resok")?))
    }
}

/// RFC 8881 §18.45.2 `typedef SECINFO4res SECINFO_NO_NAME4res;`, with
/// RFC 8881 §18.29.2
/// ```text
/// union SECINFO4res switch (nfsstat4 status) {
///  case NFS4_OK:
///         /* CURRENTFH: consumed */
///          SECINFO4resok resok4;
///  default:
///          void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type SECINFO_NO_NAME4res = Nfs4Res<SECINFO4resok>;
