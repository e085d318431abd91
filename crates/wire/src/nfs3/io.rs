//! RFC 1813 §3.3.6 READ, §3.3.7 WRITE and §3.3.21 COMMIT: the owned,
//! general-purpose forms. The I/O driver uses the allocation-free
//! encoders and borrowing decoders in [`hotpath`](super::hotpath), which
//! produce and accept the same bytes.

use super::attr::{post_op_attr, wcc_data};
use super::result::Nfs3Res;
use super::types::{count3, nfs_fh3, offset3, stable_how, writeverf3, xdr_struct};
use super::{nfs3_procedure, NFSPROC3_COMMIT, NFSPROC3_READ, NFSPROC3_WRITE};
use crate::xdr::{Decode, DecodeError, Encode, XdrReader, XdrWrite};

/// Bound on the `data` of READ replies and WRITE calls decoded by the
/// general-purpose decoders, which do not know the count that was asked
/// for. 64 MiB is far above any server's rtmax/wtmax (Ganesha and Linux
/// stop at 1 MiB); the hot-path READ decoder uses the requested count.
pub const MAX_DATA_LEN: usize = 64 << 20;

nfs3_procedure!(
    /// RFC 1813 §3.3.6 `READ3res NFSPROC3_READ(READ3args) = 6;`
    Read = NFSPROC3_READ, "READ", READ3args => READ3res
);
nfs3_procedure!(
    /// RFC 1813 §3.3.7 `WRITE3res NFSPROC3_WRITE(WRITE3args) = 7;`
    Write = NFSPROC3_WRITE, "WRITE", WRITE3args => WRITE3res
);
nfs3_procedure!(
    /// RFC 1813 §3.3.21 `COMMIT3res NFSPROC3_COMMIT(COMMIT3args) = 21;`
    Commit = NFSPROC3_COMMIT, "COMMIT", COMMIT3args => COMMIT3res
);

/// The error for a `count` field that disagrees with the length of the
/// opaque `data` that follows it. RFC 1813 says both give the number of
/// bytes; when they differ one of them is wrong and the reply cannot be
/// trusted (the Linux client fails such a READ with EIO too). Reported as
/// `TooLong` (data longer than `count`) or `Truncated` (data shorter), with
/// a `what` that names the disagreement.
pub(crate) fn check_count(
    count: u32,
    data_len: usize,
    longer: &'static str,
    shorter: &'static str,
) -> Result<(), DecodeError> {
    let count = count as usize;
    if data_len > count {
        return Err(DecodeError::TooLong {
            what: longer,
            len: data_len as u64,
            max: count as u64,
        });
    }
    if data_len < count {
        return Err(DecodeError::Truncated {
            what: shorter,
            need: count,
            have: data_len,
        });
    }
    Ok(())
}

xdr_struct!(
    /// RFC 1813 §3.3.6
    /// ```text
    /// struct READ3args {
    ///      nfs_fh3  file;
    ///      offset3  offset;
    ///      count3   count;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct READ3args {
        /// The file.
        pub file: nfs_fh3,
        /// Where to start reading.
        pub offset: offset3,
        /// How many bytes to read.
        pub count: count3,
    }
);

/// RFC 1813 §3.3.6
/// ```text
/// struct READ3resok {
///      post_op_attr   file_attributes;
///      count3         count;
///      bool           eof;
///      opaque         data<>;
/// };
/// ```
/// Decoding fails if `count` differs from the length of `data` (see
/// [`decode_read_reply`](super::hotpath::decode_read_reply)) or if `data`
/// exceeds [`MAX_DATA_LEN`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct READ3resok {
    /// The file's attributes.
    pub file_attributes: post_op_attr,
    /// Bytes returned; must equal `data.len()`.
    pub count: count3,
    /// True if the read reached the end of the file.
    pub eof: bool,
    /// The bytes read.
    pub data: Vec<u8>,
}

impl Encode for READ3resok {
    fn encode(&self, out: &mut Vec<u8>) {
        self.file_attributes.encode(out);
        out.put_u32(self.count);
        out.put_bool(self.eof);
        out.put_opaque(&self.data);
    }
}
impl Decode for READ3resok {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        let file_attributes = post_op_attr::decode(r)?;
        let count = r.u32("READ3resok count")?;
        let eof = r.bool("READ3resok eof")?;
        let data = r.opaque(MAX_DATA_LEN, "READ3resok data")?;
        check_count(
            count,
            data.len(),
            "READ3resok data (longer than count)",
            "READ3resok data (shorter than count)",
        )?;
        Ok(Self {
            file_attributes,
            count,
            eof,
            data: data.to_vec(),
        })
    }
}

xdr_struct!(
    /// RFC 1813 §3.3.6
    /// ```text
    /// struct READ3resfail {
    ///      post_op_attr   file_attributes;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct READ3resfail {
        /// The file's attributes.
        pub file_attributes: post_op_attr,
    }
);

/// RFC 1813 §3.3.6
/// ```text
/// union READ3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      READ3resok   resok;
/// default:
///      READ3resfail resfail;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type READ3res = Nfs3Res<READ3resok, READ3resfail>;

/// RFC 1813 §3.3.7
/// ```text
/// struct WRITE3args {
///      nfs_fh3     file;
///      offset3     offset;
///      count3      count;
///      stable_how  stable;
///      opaque      data<>;
/// };
/// ```
/// Decoding fails if `count` differs from the length of `data`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub struct WRITE3args {
    /// The file.
    pub file: nfs_fh3,
    /// Where to start writing.
    pub offset: offset3,
    /// Bytes to write; must equal `data.len()`.
    pub count: count3,
    /// How durable the write must be before the server replies.
    pub stable: stable_how,
    /// The bytes.
    pub data: Vec<u8>,
}

impl Encode for WRITE3args {
    fn encode(&self, out: &mut Vec<u8>) {
        self.file.encode(out);
        out.put_u64(self.offset);
        out.put_u32(self.count);
        self.stable.encode(out);
        out.put_opaque(&self.data);
    }
}
impl Decode for WRITE3args {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        let file = nfs_fh3::decode(r)?;
        let offset = r.u64("WRITE3args offset")?;
        let count = r.u32("WRITE3args count")?;
        let stable = stable_how::decode(r)?;
        let data = r.opaque(MAX_DATA_LEN, "WRITE3args data")?;
        check_count(
            count,
            data.len(),
            "WRITE3args data (longer than count)",
            "WRITE3args data (shorter than count)",
        )?;
        Ok(Self {
            file,
            offset,
            count,
            stable,
            data: data.to_vec(),
        })
    }
}

xdr_struct!(
    /// RFC 1813 §3.3.7
    /// ```text
    /// struct WRITE3resok {
    ///      wcc_data    file_wcc;
    ///      count3      count;
    ///      stable_how  committed;
    ///      writeverf3  verf;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct WRITE3resok {
        /// The file's attributes before and after.
        pub file_wcc: wcc_data,
        /// Bytes written.
        pub count: count3,
        /// How durable the data now is.
        pub committed: stable_how,
        /// The server's write verifier (changes when it reboots).
        pub verf: writeverf3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.7
    /// ```text
    /// struct WRITE3resfail {
    ///      wcc_data    file_wcc;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct WRITE3resfail {
        /// The file's attributes before and after.
        pub file_wcc: wcc_data,
    }
);

/// RFC 1813 §3.3.7
/// ```text
/// union WRITE3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      WRITE3resok    resok;
/// default:
///      WRITE3resfail  resfail;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type WRITE3res = Nfs3Res<WRITE3resok, WRITE3resfail>;

xdr_struct!(
    /// RFC 1813 §3.3.21
    /// ```text
    /// struct COMMIT3args {
    ///      nfs_fh3    file;
    ///      offset3    offset;
    ///      count3     count;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct COMMIT3args {
        /// The file.
        pub file: nfs_fh3,
        /// Start of the range to commit.
        pub offset: offset3,
        /// Length of the range; 0 means to the end of the file.
        pub count: count3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.21
    /// ```text
    /// struct COMMIT3resok {
    ///      wcc_data   file_wcc;
    ///      writeverf3 verf;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct COMMIT3resok {
        /// The file's attributes before and after.
        pub file_wcc: wcc_data,
        /// The write verifier; compare with the one the WRITEs returned.
        pub verf: writeverf3,
    }
);

xdr_struct!(
    /// RFC 1813 §3.3.21
    /// ```text
    /// struct COMMIT3resfail {
    ///      wcc_data   file_wcc;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct COMMIT3resfail {
        /// The file's attributes before and after.
        pub file_wcc: wcc_data,
    }
);

/// RFC 1813 §3.3.21
/// ```text
/// union COMMIT3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      COMMIT3resok   resok;
/// default:
///      COMMIT3resfail resfail;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type COMMIT3res = Nfs3Res<COMMIT3resok, COMMIT3resfail>;
