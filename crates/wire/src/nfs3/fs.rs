//! RFC 1813 §3.3.18 FSSTAT, §3.3.19 FSINFO and §3.3.20 PATHCONF: file
//! system information. FSINFO gives the transfer sizes (rtmax, wtmax) the
//! client splits I/O by.

use super::attr::post_op_attr;
use super::result::Nfs3Res;
use super::types::{nfs_fh3, nfstime3, size3, xdr_struct};
use super::{nfs3_procedure, NFSPROC3_FSINFO, NFSPROC3_FSSTAT, NFSPROC3_PATHCONF};

/// RFC 1813 §3.3.19 `FSF3_LINK`: the file system supports hard links.
pub const FSF3_LINK: u32 = 0x0001;
/// RFC 1813 §3.3.19 `FSF3_SYMLINK`: the file system supports symbolic links.
pub const FSF3_SYMLINK: u32 = 0x0002;
/// RFC 1813 §3.3.19 `FSF3_HOMOGENEOUS`: PATHCONF is the same for all files.
pub const FSF3_HOMOGENEOUS: u32 = 0x0008;
/// RFC 1813 §3.3.19 `FSF3_CANSETTIME`: SETATTR can set times.
pub const FSF3_CANSETTIME: u32 = 0x0010;

nfs3_procedure!(
    /// RFC 1813 §3.3.18 `FSSTAT3res NFSPROC3_FSSTAT(FSSTAT3args) = 18;`
    Fsstat = NFSPROC3_FSSTAT, "FSSTAT", FSSTAT3args => FSSTAT3res
);
nfs3_procedure!(
    /// RFC 1813 §3.3.19 `FSINFO3res NFSPROC3_FSINFO(FSINFO3args) = 19;`
    Fsinfo = NFSPROC3_FSINFO, "FSINFO", FSINFO3args => FSINFO3res
);
nfs3_procedure!(
    /// RFC 1813 §3.3.20 `PATHCONF3res NFSPROC3_PATHCONF(PATHCONF3args) = 20;`
    Pathconf = NFSPROC3_PATHCONF, "PATHCONF", PATHCONF3args => PATHCONF3res
);

xdr_struct!(
    /// RFC 1813 §3.3.18
    /// ```text
    /// struct FSSTAT3args {
    ///      nfs_fh3   fsroot;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct FSSTAT3args {
        /// Any handle in the file system.
        pub fsroot: nfs_fh3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.18
    /// ```text
    /// struct FSSTAT3resok {
    ///      post_op_attr obj_attributes;
    ///      size3        tbytes;
    ///      size3        fbytes;
    ///      size3        abytes;
    ///      size3        tfiles;
    ///      size3        ffiles;
    ///      size3        afiles;
    ///      uint32       invarsec;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct FSSTAT3resok {
        /// The object's attributes.
        pub obj_attributes: post_op_attr,
        /// Total bytes.
        pub tbytes: size3,
        /// Free bytes.
        pub fbytes: size3,
        /// Bytes available to this user.
        pub abytes: size3,
        /// Total file slots.
        pub tfiles: size3,
        /// Free file slots.
        pub ffiles: size3,
        /// File slots available to this user.
        pub afiles: size3,
        /// Seconds for which these values will not change.
        pub invarsec: u32,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.18
    /// ```text
    /// struct FSSTAT3resfail {
    ///      post_op_attr obj_attributes;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct FSSTAT3resfail {
        /// The object's attributes.
        pub obj_attributes: post_op_attr,
    }
);

/// RFC 1813 §3.3.18
/// ```text
/// union FSSTAT3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      FSSTAT3resok   resok;
/// default:
///      FSSTAT3resfail resfail;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type FSSTAT3res = Nfs3Res<FSSTAT3resok, FSSTAT3resfail>;

xdr_struct!(
    /// RFC 1813 §3.3.19
    /// ```text
    /// struct FSINFO3args {
    ///      nfs_fh3   fsroot;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct FSINFO3args {
        /// The file system's root handle (from MOUNT).
        pub fsroot: nfs_fh3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.19
    /// ```text
    /// struct FSINFO3resok {
    ///      post_op_attr obj_attributes;
    ///      uint32       rtmax;
    ///      uint32       rtpref;
    ///      uint32       rtmult;
    ///      uint32       wtmax;
    ///      uint32       wtpref;
    ///      uint32       wtmult;
    ///      uint32       dtpref;
    ///      size3        maxfilesize;
    ///      nfstime3     time_delta;
    ///      uint32       properties;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct FSINFO3resok {
        /// The root's attributes.
        pub obj_attributes: post_op_attr,
        /// Largest READ the server accepts.
        pub rtmax: u32,
        /// Preferred READ size.
        pub rtpref: u32,
        /// Suggested READ size multiple.
        pub rtmult: u32,
        /// Largest WRITE the server accepts.
        pub wtmax: u32,
        /// Preferred WRITE size.
        pub wtpref: u32,
        /// Suggested WRITE size multiple.
        pub wtmult: u32,
        /// Preferred READDIR size.
        pub dtpref: u32,
        /// Largest file size.
        pub maxfilesize: size3,
        /// Server time granularity.
        pub time_delta: nfstime3,
        /// `FSF3_*` bits.
        pub properties: u32,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.19
    /// ```text
    /// struct FSINFO3resfail {
    ///      post_op_attr obj_attributes;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct FSINFO3resfail {
        /// The root's attributes.
        pub obj_attributes: post_op_attr,
    }
);

/// RFC 1813 §3.3.19
/// ```text
/// union FSINFO3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      FSINFO3resok   resok;
/// default:
///      FSINFO3resfail resfail;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type FSINFO3res = Nfs3Res<FSINFO3resok, FSINFO3resfail>;

xdr_struct!(
    /// RFC 1813 §3.3.20
    /// ```text
    /// struct PATHCONF3args {
    ///      nfs_fh3   object;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct PATHCONF3args {
        /// The object.
        pub object: nfs_fh3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.20
    /// ```text
    /// struct PATHCONF3resok {
    ///      post_op_attr obj_attributes;
    ///      uint32       linkmax;
    ///      uint32       name_max;
    ///      bool         no_trunc;
    ///      bool         chown_restricted;
    ///      bool         case_insensitive;
    ///      bool         case_preserving;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct PATHCONF3resok {
        /// The object's attributes.
        pub obj_attributes: post_op_attr,
        /// Most hard links to one object.
        pub linkmax: u32,
        /// Longest name.
        pub name_max: u32,
        /// True if longer names are refused rather than truncated.
        pub no_trunc: bool,
        /// True if only root may change the owner.
        pub chown_restricted: bool,
        /// True if names are compared without case.
        pub case_insensitive: bool,
        /// True if the case of names is kept.
        pub case_preserving: bool,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.20
    /// ```text
    /// struct PATHCONF3resfail {
    ///      post_op_attr obj_attributes;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct PATHCONF3resfail {
        /// The object's attributes.
        pub obj_attributes: post_op_attr,
    }
);

/// RFC 1813 §3.3.20
/// ```text
/// union PATHCONF3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      PATHCONF3resok   resok;
/// default:
///      PATHCONF3resfail resfail;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type PATHCONF3res = Nfs3Res<PATHCONF3resok, PATHCONF3resfail>;
