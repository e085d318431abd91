//! RFC 8881 §18.22 READ, §18.32 WRITE and §18.3 COMMIT: the owned,
//! general-purpose forms. The I/O path uses the allocation-free encoders
//! and borrowing decoders of [`hotpath`](super::hotpath), which produce and
//! accept the same bytes.

use super::result::Nfs4Res;
use super::types::{count4, offset4, stable_how4, stateid4, verifier4};
use crate::nfs3::io::MAX_DATA_LEN;
use crate::nfs3::types::xdr_struct;
use crate::xdr::{Decode, DecodeError, Encode, XdrReader, XdrWrite};

xdr_struct!(
    /// RFC 8881 §18.22.1
    /// ```text
    /// struct READ4args {
    ///         /* CURRENT_FH: file */
    ///         stateid4        stateid;
    ///         offset4         offset;
    ///         count4          count;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct READ4args {
        /// The open (or lock, or anonymous) stateid.
        pub stateid: stateid4,
        /// Where to start reading.
        pub offset: offset4,
        /// How many bytes to read.
        pub count: count4,
    }
);

/// RFC 8881 §18.22.2
/// ```text
/// struct READ4resok {
///         bool            eof;
///         opaque          data<>;
/// };
/// ```
/// The general-purpose decoder bounds `data` by
/// [`MAX_DATA_LEN`]; the hot-path decoder
/// by the count that was asked for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct READ4resok {
    /// True if the read reached the end of the file.
    pub eof: bool,
    /// The bytes read.
    pub data: Vec<u8>,
}

impl Encode for READ4resok {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_bool(self.eof);
        out.put_opaque(&self.data);
    }
}
impl Decode for READ4resok {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            eof: r.bool("READ4resok eof")?,
            data: r.opaque(MAX_DATA_LEN, "READ4resok data")?.to_vec(),
        })
    }
}

/// RFC 8881 §18.22.2
/// ```text
/// union READ4res switch (nfsstat4 status) {
///  case NFS4_OK:
///          READ4resok     resok4;
///  default:
///          void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type READ4res = Nfs4Res<READ4resok>;

/// RFC 8881 §18.32.1
/// ```text
/// struct WRITE4args {
///         /* CURRENT_FH: file */
///         stateid4        stateid;
///         offset4         offset;
///         stable_how4     stable;
///         opaque          data<>;
/// };
/// ```
/// Unlike NFSv3 there is no separate `count`: the data's length is the
/// count.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub struct WRITE4args {
    /// The open (or lock) stateid.
    pub stateid: stateid4,
    /// Where to start writing.
    pub offset: offset4,
    /// How durable the write must be before the server replies.
    pub stable: stable_how4,
    /// The bytes.
    pub data: Vec<u8>,
}

impl Encode for WRITE4args {
    fn encode(&self, out: &mut Vec<u8>) {
        self.stateid.encode(out);
        out.put_u64(self.offset);
        self.stable.encode(out);
        out.put_opaque(&self.data);
    }
}
impl Decode for WRITE4args {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            stateid: stateid4::decode(r)?,
            offset: r.u64("WRITE4args offset")?,
            stable: stable_how4::decode(r)?,
            data: r.opaque(MAX_DATA_LEN, "WRITE4args data")?.to_vec(),
        })
    }
}

xdr_struct!(
    /// RFC 8881 §18.32.2
    /// ```text
    /// struct WRITE4resok {
    ///         count4          count;
    ///         stable_how4     committed;
    ///         verifier4       writeverf;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct WRITE4resok {
        /// Bytes written (may be less than sent: the caller sends the rest).
        pub count: count4,
        /// How durable the data now is.
        pub committed: stable_how4,
        /// The server's write verifier (changes when it restarts).
        pub writeverf: verifier4,
    }
);

/// RFC 8881 §18.32.2
/// ```text
/// union WRITE4res switch (nfsstat4 status) {
///  case NFS4_OK:
///          WRITE4resok    resok4;
///  default:
///          void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type WRITE4res = Nfs4Res<WRITE4resok>;

xdr_struct!(
    /// RFC 8881 §18.3.1
    /// ```text
    /// struct COMMIT4args {
    ///         /* CURRENT_FH: file */
    ///         offset4         offset;
    ///         count4          count;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct COMMIT4args {
        /// Start of the range.
        pub offset: offset4,
        /// Length of the range; 0 means to the end of the file.
        pub count: count4,
    }
);

xdr_struct!(
    /// RFC 8881 §18.3.2
    /// ```text
    /// struct COMMIT4resok {
    ///         verifier4       writeverf;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct COMMIT4resok {
        /// The write verifier; compare with the one the WRITEs returned.
        pub writeverf: verifier4,
    }
);

/// RFC 8881 §18.3.2
/// ```text
/// union COMMIT4res switch (nfsstat4 status) {
///  case NFS4_OK:
///          COMMIT4resok   resok4;
///  default:
///          void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type COMMIT4res = Nfs4Res<COMMIT4resok>;
