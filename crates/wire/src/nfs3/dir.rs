//! RFC 1813 §3.3.16 READDIR and §3.3.17 READDIRPLUS.
//!
//! Entries arrive as XDR linked lists; they are decoded iteratively (never
//! by recursion) into vectors of at most [`MAX_DIR_ENTRIES`] entries.

use super::attr::{post_op_attr, post_op_fh3};
use super::result::Nfs3Res;
use super::types::{
    cookie3, cookieverf3, count3, decode_list, encode_list, fileid3, filename3, nfs_fh3, xdr_struct,
};
use super::{nfs3_procedure, NFSPROC3_READDIR, NFSPROC3_READDIRPLUS};
use crate::xdr::{Decode, DecodeError, Encode, XdrReader, XdrWrite};

/// Most entries accepted in one READDIR or READDIRPLUS reply; more is
/// `DecodeError::TooLong`. A 1 MiB reply of the shortest possible
/// READDIR entries holds about 43,000.
pub const MAX_DIR_ENTRIES: usize = 65536;

nfs3_procedure!(
    /// RFC 1813 §3.3.16 `READDIR3res NFSPROC3_READDIR(READDIR3args) = 16;`
    Readdir = NFSPROC3_READDIR, "READDIR", READDIR3args => READDIR3res
);
nfs3_procedure!(
    /// RFC 1813 §3.3.17
    /// `READDIRPLUS3res NFSPROC3_READDIRPLUS(READDIRPLUS3args) = 17;`
    Readdirplus = NFSPROC3_READDIRPLUS, "READDIRPLUS", READDIRPLUS3args => READDIRPLUS3res
);

xdr_struct!(
    /// RFC 1813 §3.3.16
    /// ```text
    /// struct READDIR3args {
    ///      nfs_fh3      dir;
    ///      cookie3      cookie;
    ///      cookieverf3  cookieverf;
    ///      count3       count;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct READDIR3args {
        /// The directory.
        pub dir: nfs_fh3,
        /// Where to continue (0 for the start).
        pub cookie: cookie3,
        /// The verifier from the previous reply (zero for the start).
        pub cookieverf: cookieverf3,
        /// Largest reply wanted, in bytes.
        pub count: count3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.16 (the `nextentry` link is the position in
    /// [`dirlist3::entries`])
    /// ```text
    /// struct entry3 {
    ///      fileid3      fileid;
    ///      filename3    name;
    ///      cookie3      cookie;
    ///      entry3       *nextentry;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct entry3 {
        /// File id.
        pub fileid: fileid3,
        /// Name.
        pub name: filename3,
        /// Cookie to continue after this entry.
        pub cookie: cookie3,
    }
);

/// RFC 1813 §3.3.16
/// ```text
/// struct dirlist3 {
///      entry3       *entries;
///      bool         eof;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct dirlist3 {
    /// The entries, in list order.
    pub entries: Vec<entry3>,
    /// True if this is the end of the directory.
    pub eof: bool,
}

impl Encode for dirlist3 {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_list(&self.entries, out);
        out.put_bool(self.eof);
    }
}
impl Decode for dirlist3 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            entries: decode_list(r, MAX_DIR_ENTRIES, "entry3")?,
            eof: r.bool("dirlist3 eof")?,
        })
    }
}

xdr_struct!(
    /// RFC 1813 §3.3.16
    /// ```text
    /// struct READDIR3resok {
    ///      post_op_attr dir_attributes;
    ///      cookieverf3  cookieverf;
    ///      dirlist3     reply;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct READDIR3resok {
        /// The directory's attributes.
        pub dir_attributes: post_op_attr,
        /// Verifier to send with the next cookie.
        pub cookieverf: cookieverf3,
        /// The entries.
        pub reply: dirlist3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.16
    /// ```text
    /// struct READDIR3resfail {
    ///      post_op_attr dir_attributes;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct READDIR3resfail {
        /// The directory's attributes.
        pub dir_attributes: post_op_attr,
    }
);

/// RFC 1813 §3.3.16
/// ```text
/// union READDIR3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      READDIR3resok   resok;
/// default:
///      READDIR3resfail resfail;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type READDIR3res = Nfs3Res<READDIR3resok, READDIR3resfail>;

xdr_struct!(
    /// RFC 1813 §3.3.17
    /// ```text
    /// struct READDIRPLUS3args {
    ///      nfs_fh3      dir;
    ///      cookie3      cookie;
    ///      cookieverf3  cookieverf;
    ///      count3       dircount;
    ///      count3       maxcount;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct READDIRPLUS3args {
        /// The directory.
        pub dir: nfs_fh3,
        /// Where to continue (0 for the start).
        pub cookie: cookie3,
        /// The verifier from the previous reply (zero for the start).
        pub cookieverf: cookieverf3,
        /// Bytes of directory information (names, ids, cookies) wanted.
        pub dircount: count3,
        /// Largest reply wanted, in bytes.
        pub maxcount: count3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.17 (the `nextentry` link is the position in
    /// [`dirlistplus3::entries`])
    /// ```text
    /// struct entryplus3 {
    ///      fileid3      fileid;
    ///      filename3    name;
    ///      cookie3      cookie;
    ///      post_op_attr name_attributes;
    ///      post_op_fh3  name_handle;
    ///      entryplus3   *nextentry;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct entryplus3 {
        /// File id.
        pub fileid: fileid3,
        /// Name.
        pub name: filename3,
        /// Cookie to continue after this entry.
        pub cookie: cookie3,
        /// The entry's attributes, if sent.
        pub name_attributes: post_op_attr,
        /// The entry's handle, if sent.
        pub name_handle: post_op_fh3,
    }
);

/// RFC 1813 §3.3.17
/// ```text
/// struct dirlistplus3 {
///      entryplus3   *entries;
///      bool         eof;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct dirlistplus3 {
    /// The entries, in list order.
    pub entries: Vec<entryplus3>,
    /// True if this is the end of the directory.
    pub eof: bool,
}

impl Encode for dirlistplus3 {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_list(&self.entries, out);
        out.put_bool(self.eof);
    }
}
impl Decode for dirlistplus3 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            entries: decode_list(r, MAX_DIR_ENTRIES, "entryplus3")?,
            eof: r.bool("dirlistplus3 eof")?,
        })
    }
}

xdr_struct!(
    /// RFC 1813 §3.3.17
    /// ```text
    /// struct READDIRPLUS3resok {
    ///      post_op_attr dir_attributes;
    ///      cookieverf3  cookieverf;
    ///      dirlistplus3 reply;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct READDIRPLUS3resok {
        /// The directory's attributes.
        pub dir_attributes: post_op_attr,
        /// Verifier to send with the next cookie.
        pub cookieverf: cookieverf3,
        /// The entries.
        pub reply: dirlistplus3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.17
    /// ```text
    /// struct READDIRPLUS3resfail {
    ///      post_op_attr dir_attributes;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct READDIRPLUS3resfail {
        /// The directory's attributes.
        pub dir_attributes: post_op_attr,
    }
);

/// RFC 1813 §3.3.17
/// ```text
/// union READDIRPLUS3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      READDIRPLUS3resok   resok;
/// default:
///      READDIRPLUS3resfail resfail;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type READDIRPLUS3res = Nfs3Res<READDIRPLUS3resok, READDIRPLUS3resfail>;
