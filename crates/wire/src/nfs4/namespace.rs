//! Changing the name space (RFC 8881 §18.4 CREATE, §18.25 REMOVE,
//! §18.26 RENAME, §18.9 LINK) and reading a symbolic link (§18.24
//! READLINK). Regular files are created by OPEN, not CREATE; RENAME and
//! LINK take their source from the saved file handle (SAVEFH).

use super::attr::fattr4;
use super::result::Nfs4Res;
use super::types::{bitmap4, change_info4, component4, linktext4, nfs_ftype4, specdata4};
use crate::nfs3::types::xdr_struct;
use crate::xdr::{Decode, DecodeError, Encode, XdrReader};

/// RFC 8881 §18.4.1
/// ```text
/// union createtype4 switch (nfs_ftype4 type) {
///  case NF4LNK:
///          linktext4 linkdata;
///  case NF4BLK:
///  case NF4CHR:
///          specdata4 devdata;
///  case NF4SOCK:
///  case NF4FIFO:
///  case NF4DIR:
///          void;
///  default:
///          void;  /* server should return NFS4ERR_BADTYPE */
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum createtype4 {
    /// A symbolic link to this text.
    NF4LNK(linktext4),
    /// A block device.
    NF4BLK(specdata4),
    /// A character device.
    NF4CHR(specdata4),
    /// A type with no data: `NF4DIR` (mkdir), `NF4SOCK`, `NF4FIFO`, or
    /// another value (the server answers `NFS4ERR_BADTYPE`).
    Other(nfs_ftype4),
}

impl Encode for createtype4 {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            createtype4::NF4LNK(text) => {
                nfs_ftype4::NF4LNK.encode(out);
                text.encode(out);
            }
            createtype4::NF4BLK(d) => {
                nfs_ftype4::NF4BLK.encode(out);
                d.encode(out);
            }
            createtype4::NF4CHR(d) => {
                nfs_ftype4::NF4CHR.encode(out);
                d.encode(out);
            }
            createtype4::Other(t) => {
                debug_assert!(!matches!(
                    *t,
                    nfs_ftype4::NF4LNK | nfs_ftype4::NF4BLK | nfs_ftype4::NF4CHR
                ));
                t.encode(out);
            }
        }
    }
}
impl Decode for createtype4 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(match nfs_ftype4::decode(r)? {
            nfs_ftype4::NF4LNK => createtype4::NF4LNK(linktext4::decode(r)?),
            nfs_ftype4::NF4BLK => createtype4::NF4BLK(specdata4::decode(r)?),
            nfs_ftype4::NF4CHR => createtype4::NF4CHR(specdata4::decode(r)?),
            other => createtype4::Other(other),
        })
    }
}

xdr_struct!(
    /// RFC 8881 §18.4.1
    /// ```text
    /// struct CREATE4args {
    ///         /* CURRENT_FH: directory for creation */
    ///         createtype4     objtype;
    ///         component4      objname;
    ///         fattr4          createattrs;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct CREATE4args {
        /// What to create.
        pub objtype: createtype4,
        /// Its name in the current directory.
        pub objname: component4,
        /// Attributes to give it (e.g. `mode`).
        pub createattrs: fattr4,
    }
);

xdr_struct!(
    /// RFC 8881 §18.4.2
    /// ```text
    /// struct CREATE4resok {
    ///         change_info4    cinfo;
    ///         bitmap4         attrset;        /* attributes set */
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct CREATE4resok {
        /// The directory's change attribute around the create.
        pub cinfo: change_info4,
        /// The attributes that were set.
        pub attrset: bitmap4,
    }
);

/// RFC 8881 §18.4.2
/// ```text
/// union CREATE4res switch (nfsstat4 status) {
///  case NFS4_OK:
///          /* new CURRENTFH: created object */
///          CREATE4resok resok4;
///  default:
///          void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type CREATE4res = Nfs4Res<CREATE4resok>;

xdr_struct!(
    /// RFC 8881 §18.25.1
    /// ```text
    /// struct REMOVE4args {
    ///         /* CURRENT_FH: directory */
    ///         component4      target;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct REMOVE4args {
        /// The name to remove (file or empty directory).
        pub target: component4,
    }
);

xdr_struct!(
    /// RFC 8881 §18.25.2
    /// ```text
    /// struct REMOVE4resok {
    ///         change_info4    cinfo;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct REMOVE4resok {
        /// The directory's change attribute around the removal.
        pub cinfo: change_info4,
    }
);

/// RFC 8881 §18.25.2
/// ```text
/// union REMOVE4res switch (nfsstat4 status) {
///  case NFS4_OK:
///          REMOVE4resok   resok4;
///  default:
///          void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type REMOVE4res = Nfs4Res<REMOVE4resok>;

xdr_struct!(
    /// RFC 8881 §18.26.1
    /// ```text
    /// struct RENAME4args {
    ///         /* SAVED_FH: source directory */
    ///         component4      oldname;
    ///         /* CURRENT_FH: target directory */
    ///         component4      newname;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct RENAME4args {
        /// The name in the saved (source) directory.
        pub oldname: component4,
        /// The name in the current (target) directory.
        pub newname: component4,
    }
);

xdr_struct!(
    /// RFC 8881 §18.26.2
    /// ```text
    /// struct RENAME4resok {
    ///         change_info4    source_cinfo;
    ///         change_info4    target_cinfo;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct RENAME4resok {
        /// The source directory's change attribute.
        pub source_cinfo: change_info4,
        /// The target directory's change attribute.
        pub target_cinfo: change_info4,
    }
);

/// RFC 8881 §18.26.2
/// ```text
/// union RENAME4res switch (nfsstat4 status) {
///  case NFS4_OK:
///         RENAME4resok    resok4;
///  default:
///         void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type RENAME4res = Nfs4Res<RENAME4resok>;

xdr_struct!(
    /// RFC 8881 §18.9.1
    /// ```text
    /// struct LINK4args {
    ///         /* SAVED_FH: source object */
    ///         /* CURRENT_FH: target directory */
    ///         component4      newname;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct LINK4args {
        /// The new name in the current directory for the saved object.
        pub newname: component4,
    }
);

xdr_struct!(
    /// RFC 8881 §18.9.2
    /// ```text
    /// struct LINK4resok {
    ///         change_info4    cinfo;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct LINK4resok {
        /// The directory's change attribute around the link.
        pub cinfo: change_info4,
    }
);

/// RFC 8881 §18.9.2
/// ```text
/// union LINK4res switch (nfsstat4 status) {
///  case NFS4_OK:
///          LINK4resok resok4;
///  default:
///          void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type LINK4res = Nfs4Res<LINK4resok>;

xdr_struct!(
    /// RFC 8881 §18.24.2 (READLINK has no arguments: `CURRENT_FH` is the
    /// symbolic link)
    /// ```text
    /// struct READLINK4resok {
    ///         linktext4       link;
    /// };
    /// ```
    /// The text is bounded on decode by Linux's `PATH_MAX` (4096 bytes,
    /// as NFSv3's `nfspath3` here), checked before anything is allocated.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct READLINK4resok {
        /// The link's content, as stored (not necessarily UTF-8).
        pub link: linktext4,
    }
);

/// RFC 8881 §18.24.2
/// ```text
/// union READLINK4res switch (nfsstat4 status) {
///  case NFS4_OK:
///          READLINK4resok  resok4;
///  default:
///          void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type READLINK4res = Nfs4Res<READLINK4resok>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xdr::{decode_exact, to_bytes};

    #[test]
    fn readlink_res_rejects_a_link_longer_than_path_max_before_allocating() {
        // NFS4_OK, then a linktext4 claiming 4097 bytes with none behind it.
        let mut v = Vec::new();
        for word in [0u32, 4097] {
            v.extend_from_slice(&word.to_be_bytes());
        }
        let e = decode_exact::<READLINK4res>(&v, "READLINK4res").unwrap_err();
        assert!(
            matches!(
                e,
                DecodeError::TooLong {
                    len: 4097,
                    max: 4096,
                    ..
                }
            ),
            "{e:?}"
        );
        let ok = READLINK4res::Ok(READLINK4resok {
            link: linktext4::from(&b"../target\xff"[..]),
        });
        assert_eq!(
            decode_exact::<READLINK4res>(&to_bytes(&ok), "READLINK4res").unwrap(),
            ok
        );
    }
}
