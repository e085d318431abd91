//! RFC 1813 §3.3.8 CREATE, §3.3.9 MKDIR, §3.3.12 REMOVE, §3.3.13 RMDIR and
//! §3.3.14 RENAME: the procedures that change a directory.

use super::attr::{post_op_attr, post_op_fh3, sattr3, wcc_data};
use super::result::Nfs3Res;
use super::types::{createmode3, createverf3, diropargs3, xdr_struct};
use super::{
    nfs3_procedure, NFSPROC3_CREATE, NFSPROC3_MKDIR, NFSPROC3_REMOVE, NFSPROC3_RENAME,
    NFSPROC3_RMDIR,
};
use crate::xdr::{Decode, DecodeError, Encode, XdrReader};

nfs3_procedure!(
    /// RFC 1813 §3.3.8 `CREATE3res NFSPROC3_CREATE(CREATE3args) = 8;`
    Create = NFSPROC3_CREATE, "CREATE", CREATE3args => CREATE3res
);
nfs3_procedure!(
    /// RFC 1813 §3.3.9 `MKDIR3res NFSPROC3_MKDIR(MKDIR3args) = 9;`
    Mkdir = NFSPROC3_MKDIR, "MKDIR", MKDIR3args => MKDIR3res
);
nfs3_procedure!(
    /// RFC 1813 §3.3.12 `REMOVE3res NFSPROC3_REMOVE(REMOVE3args) = 12;`
    Remove = NFSPROC3_REMOVE, "REMOVE", REMOVE3args => REMOVE3res
);
nfs3_procedure!(
    /// RFC 1813 §3.3.13 `RMDIR3res NFSPROC3_RMDIR(RMDIR3args) = 13;`
    Rmdir = NFSPROC3_RMDIR, "RMDIR", RMDIR3args => RMDIR3res
);
nfs3_procedure!(
    /// RFC 1813 §3.3.14 `RENAME3res NFSPROC3_RENAME(RENAME3args) = 14;`
    Rename = NFSPROC3_RENAME, "RENAME", RENAME3args => RENAME3res
);

/// RFC 1813 §3.3.8
/// ```text
/// union createhow3 switch (createmode3 mode) {
/// case UNCHECKED:
/// case GUARDED:
///      sattr3       obj_attributes;
/// case EXCLUSIVE:
///      createverf3  verf;
/// };
/// ```
/// The union has no default arm, so an unknown `createmode3` is a decode
/// error (`BadDiscriminant`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum createhow3 {
    /// `UNCHECKED`: create, or truncate-and-set if the file exists.
    Unchecked(sattr3),
    /// `GUARDED`: fail with `NFS3ERR_EXIST` if the file exists.
    Guarded(sattr3),
    /// `EXCLUSIVE`: create once, identified by the verifier (safe to retry).
    Exclusive(createverf3),
}

impl createhow3 {
    /// The `createmode3` discriminant.
    pub fn mode(&self) -> createmode3 {
        match self {
            createhow3::Unchecked(_) => createmode3::UNCHECKED,
            createhow3::Guarded(_) => createmode3::GUARDED,
            createhow3::Exclusive(_) => createmode3::EXCLUSIVE,
        }
    }
}

impl Encode for createhow3 {
    fn encode(&self, out: &mut Vec<u8>) {
        self.mode().encode(out);
        match self {
            createhow3::Unchecked(a) | createhow3::Guarded(a) => a.encode(out),
            createhow3::Exclusive(v) => v.encode(out),
        }
    }
}
impl Decode for createhow3 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        match createmode3::decode(r)? {
            createmode3::UNCHECKED => Ok(createhow3::Unchecked(sattr3::decode(r)?)),
            createmode3::GUARDED => Ok(createhow3::Guarded(sattr3::decode(r)?)),
            createmode3::EXCLUSIVE => Ok(createhow3::Exclusive(createverf3::decode(r)?)),
            other => Err(DecodeError::BadDiscriminant {
                what: "createmode3",
                value: other.0,
            }),
        }
    }
}

xdr_struct!(
    /// RFC 1813 §3.3.8
    /// ```text
    /// struct CREATE3args {
    ///      diropargs3   where;
    ///      createhow3   how;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct CREATE3args {
        /// Directory and name of the new file (`where` in the RFC).
        pub where_: diropargs3,
        /// How to create it.
        pub how: createhow3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.8
    /// ```text
    /// struct CREATE3resok {
    ///      post_op_fh3   obj;
    ///      post_op_attr  obj_attributes;
    ///      wcc_data      dir_wcc;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct CREATE3resok {
        /// The new file's handle, if the server sent it (else LOOKUP it).
        pub obj: post_op_fh3,
        /// Its attributes.
        pub obj_attributes: post_op_attr,
        /// The directory's attributes before and after.
        pub dir_wcc: wcc_data,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.8
    /// ```text
    /// struct CREATE3resfail {
    ///      wcc_data      dir_wcc;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct CREATE3resfail {
        /// The directory's attributes before and after.
        pub dir_wcc: wcc_data,
    }
);

/// RFC 1813 §3.3.8
/// ```text
/// union CREATE3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      CREATE3resok    resok;
/// default:
///      CREATE3resfail  resfail;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type CREATE3res = Nfs3Res<CREATE3resok, CREATE3resfail>;

xdr_struct!(
    /// RFC 1813 §3.3.9
    /// ```text
    /// struct MKDIR3args {
    ///      diropargs3   where;
    ///      sattr3       attributes;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct MKDIR3args {
        /// Parent directory and name of the new directory (`where`).
        pub where_: diropargs3,
        /// Its initial attributes.
        pub attributes: sattr3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.9
    /// ```text
    /// struct MKDIR3resok {
    ///      post_op_fh3   obj;
    ///      post_op_attr  obj_attributes;
    ///      wcc_data      dir_wcc;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct MKDIR3resok {
        /// The new directory's handle, if sent.
        pub obj: post_op_fh3,
        /// Its attributes.
        pub obj_attributes: post_op_attr,
        /// The parent's attributes before and after.
        pub dir_wcc: wcc_data,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.9
    /// ```text
    /// struct MKDIR3resfail {
    ///      wcc_data      dir_wcc;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct MKDIR3resfail {
        /// The parent's attributes before and after.
        pub dir_wcc: wcc_data,
    }
);

/// RFC 1813 §3.3.9
/// ```text
/// union MKDIR3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      MKDIR3resok   resok;
/// default:
///      MKDIR3resfail resfail;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type MKDIR3res = Nfs3Res<MKDIR3resok, MKDIR3resfail>;

xdr_struct!(
    /// RFC 1813 §3.3.12
    /// ```text
    /// struct REMOVE3args {
    ///      diropargs3  object;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct REMOVE3args {
        /// Directory and name to remove.
        pub object: diropargs3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.12
    /// ```text
    /// struct REMOVE3resok {
    ///      wcc_data    dir_wcc;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct REMOVE3resok {
        /// The directory's attributes before and after.
        pub dir_wcc: wcc_data,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.12
    /// ```text
    /// struct REMOVE3resfail {
    ///      wcc_data    dir_wcc;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct REMOVE3resfail {
        /// The directory's attributes before and after.
        pub dir_wcc: wcc_data,
    }
);

/// RFC 1813 §3.3.12
/// ```text
/// union REMOVE3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      REMOVE3resok   resok;
/// default:
///      REMOVE3resfail resfail;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type REMOVE3res = Nfs3Res<REMOVE3resok, REMOVE3resfail>;

xdr_struct!(
    /// RFC 1813 §3.3.13
    /// ```text
    /// struct RMDIR3args {
    ///      diropargs3  object;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct RMDIR3args {
        /// Parent directory and name of the directory to remove.
        pub object: diropargs3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.13
    /// ```text
    /// struct RMDIR3resok {
    ///      wcc_data    dir_wcc;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct RMDIR3resok {
        /// The parent's attributes before and after.
        pub dir_wcc: wcc_data,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.13
    /// ```text
    /// struct RMDIR3resfail {
    ///      wcc_data    dir_wcc;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct RMDIR3resfail {
        /// The parent's attributes before and after.
        pub dir_wcc: wcc_data,
    }
);

/// RFC 1813 §3.3.13
/// ```text
/// union RMDIR3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      RMDIR3resok   resok;
/// default:
///      RMDIR3resfail resfail;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type RMDIR3res = Nfs3Res<RMDIR3resok, RMDIR3resfail>;

xdr_struct!(
    /// RFC 1813 §3.3.14
    /// ```text
    /// struct RENAME3args {
    ///      diropargs3   from;
    ///      diropargs3   to;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct RENAME3args {
        /// Source directory and name.
        pub from: diropargs3,
        /// Target directory and name.
        pub to: diropargs3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.14
    /// ```text
    /// struct RENAME3resok {
    ///      wcc_data     fromdir_wcc;
    ///      wcc_data     todir_wcc;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct RENAME3resok {
        /// Source directory's attributes before and after.
        pub fromdir_wcc: wcc_data,
        /// Target directory's attributes before and after.
        pub todir_wcc: wcc_data,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.14
    /// ```text
    /// struct RENAME3resfail {
    ///      wcc_data     fromdir_wcc;
    ///      wcc_data     todir_wcc;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct RENAME3resfail {
        /// Source directory's attributes before and after.
        pub fromdir_wcc: wcc_data,
        /// Target directory's attributes before and after.
        pub todir_wcc: wcc_data,
    }
);

/// RFC 1813 §3.3.14
/// ```text
/// union RENAME3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      RENAME3resok   resok;
/// default:
///      RENAME3resfail resfail;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type RENAME3res = Nfs3Res<RENAME3resok, RENAME3resfail>;
