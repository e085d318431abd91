//! RFC 8881 §18.23 READDIR: directory entries with their attributes.

use super::attr::fattr4;
use super::result::Nfs4Res;
use super::types::{bitmap4, component4, count4, nfs_cookie4, verifier4};
use crate::nfs3::types::{decode_list, encode_list, xdr_struct};
use crate::xdr::{Decode, DecodeError, Encode, XdrReader, XdrWrite};

/// Bound on the entries of one READDIR reply (the NFSv3 bound of this
/// crate). Every entry also takes at least 24 bytes of input, so memory is
/// bounded by the record too.
pub const MAX_DIR_ENTRIES: usize = 65536;

xdr_struct!(
    /// RFC 8881 §18.23.1
    /// ```text
    /// struct READDIR4args {
    ///         /* CURRENT_FH: directory */
    ///         nfs_cookie4     cookie;
    ///         verifier4       cookieverf;
    ///         count4          dircount;
    ///         count4          maxcount;
    ///         bitmap4         attr_request;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct READDIR4args {
        /// 0 to start, else the cookie of the last entry received.
        pub cookie: nfs_cookie4,
        /// 0 to start, else the verifier of the previous reply.
        pub cookieverf: verifier4,
        /// Bytes of names and cookies wanted (a hint).
        pub dircount: count4,
        /// Largest reply, in bytes.
        pub maxcount: count4,
        /// Attributes wanted for each entry.
        pub attr_request: bitmap4,
    }
);

xdr_struct!(
    /// RFC 8881 §18.23.2 (the `nextentry` link is the list encoding of
    /// [`dirlist4`])
    /// ```text
    /// struct entry4 {
    ///         nfs_cookie4     cookie;
    ///         component4      name;
    ///         fattr4          attrs;
    ///         entry4          *nextentry;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct entry4 {
        /// Where to continue after this entry.
        pub cookie: nfs_cookie4,
        /// The name (servers do not return "." and "..").
        pub name: component4,
        /// The attributes asked for.
        pub attrs: fattr4,
    }
);

/// RFC 8881 §18.23.2
/// ```text
/// struct dirlist4 {
///         entry4          *entries;
///         bool            eof;
/// };
/// ```
/// At most [`MAX_DIR_ENTRIES`] entries are accepted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct dirlist4 {
    /// The entries, in order.
    pub entries: Vec<entry4>,
    /// True if these are the last entries.
    pub eof: bool,
}

impl Encode for dirlist4 {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_list(&self.entries, out);
        out.put_bool(self.eof);
    }
}
impl Decode for dirlist4 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            entries: decode_list(r, MAX_DIR_ENTRIES, "entry4")?,
            eof: r.bool("dirlist4 eof")?,
        })
    }
}

xdr_struct!(
    /// RFC 8881 §18.23.2
    /// ```text
    /// struct READDIR4resok {
    ///         verifier4       cookieverf;
    ///         dirlist4        reply;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct READDIR4resok {
        /// Send back with the next READDIR.
        pub cookieverf: verifier4,
        /// The entries.
        pub reply: dirlist4,
    }
);

/// RFC 8881 §18.23.2
/// ```text
/// union READDIR4res switch (nfsstat4 status) {
///  case NFS4_OK:
///          READDIR4resok  resok4;
///  default:
///          void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type READDIR4res = Nfs4Res<READDIR4resok>;
