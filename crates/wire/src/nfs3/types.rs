//! RFC 1813 §2.5 basic data types and §2.6 `nfsstat3`, plus the small
//! enums defined inside procedures (`stable_how` §3.3.7, `createmode3`
//! §3.3.8, `time_how` §2.5).

use std::fmt;

use crate::wire_enum;
use crate::xdr::{Decode, DecodeError, Encode, XdrReader, XdrWrite};

/// RFC 1813 §2.4 `NFS3_FHSIZE`: the largest file handle, in bytes.
pub const NFS3_FHSIZE: usize = 64;
/// RFC 1813 §2.4 `NFS3_COOKIEVERFSIZE`.
pub const NFS3_COOKIEVERFSIZE: usize = 8;
/// RFC 1813 §2.4 `NFS3_CREATEVERFSIZE`.
pub const NFS3_CREATEVERFSIZE: usize = 8;
/// RFC 1813 §2.4 `NFS3_WRITEVERFSIZE`.
pub const NFS3_WRITEVERFSIZE: usize = 8;
/// Bound on a `filename3` (the RFC leaves `string filename3<>` unbounded;
/// 255 is `NAME_MAX` on every server we know, Ganesha included).
pub const MAX_NAME_LEN: usize = 255;
/// Bound on an `nfspath3` (the RFC leaves it unbounded): Linux's
/// `PATH_MAX`, 4096. A symbolic link target is at most 4095 bytes on
/// Linux (`PATH_MAX` less the NUL); Ganesha stores up to 4095 and answers
/// a longer one with NFS3ERR_NAMETOOLONG.
pub const MAX_PATH_LEN: usize = 4096;

/// Declares an XDR struct whose fields are encoded and decoded in order,
/// each with its own `Encode`/`Decode`. Attributes (docs, derives) pass
/// through.
macro_rules! xdr_struct {
    (
        $(#[$m:meta])*
        pub struct $name:ident {
            $( $(#[$fm:meta])* pub $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$m])*
        #[allow(non_camel_case_types)]
        pub struct $name {
            $( $(#[$fm])* pub $field: $ty, )*
        }
        impl $crate::xdr::Encode for $name {
            #[allow(unused_variables)]
            fn encode(&self, out: &mut Vec<u8>) {
                $( $crate::xdr::Encode::encode(&self.$field, out); )*
            }
        }
        impl $crate::xdr::Decode for $name {
            #[allow(unused_variables)]
            fn decode(
                r: &mut $crate::xdr::XdrReader<'_>,
            ) -> Result<Self, $crate::xdr::DecodeError> {
                Ok(Self {
                    $( $field: <$ty as $crate::xdr::Decode>::decode(r)?, )*
                })
            }
        }
    };
}
pub(crate) use xdr_struct;

/// XDR `void`: encodes to nothing. Used for NULL procedures and for result
/// arms that carry no data (`GETATTR3res` failure).
impl Encode for () {
    fn encode(&self, _out: &mut Vec<u8>) {}
}
impl Decode for () {
    fn decode(_r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(())
    }
}

wire_enum!(
    /// RFC 1813 §2.6 Defined Error Numbers
    /// ```text
    /// enum nfsstat3 {
    ///      NFS3_OK             = 0,
    ///      NFS3ERR_PERM        = 1,
    ///      NFS3ERR_NOENT       = 2,
    ///      NFS3ERR_IO          = 5,
    ///      NFS3ERR_NXIO        = 6,
    ///      NFS3ERR_ACCES       = 13,
    ///      NFS3ERR_EXIST       = 17,
    ///      NFS3ERR_XDEV        = 18,
    ///      NFS3ERR_NODEV       = 19,
    ///      NFS3ERR_NOTDIR      = 20,
    ///      NFS3ERR_ISDIR       = 21,
    ///      NFS3ERR_INVAL       = 22,
    ///      NFS3ERR_FBIG        = 27,
    ///      NFS3ERR_NOSPC       = 28,
    ///      NFS3ERR_ROFS        = 30,
    ///      NFS3ERR_MLINK       = 31,
    ///      NFS3ERR_NAMETOOLONG = 63,
    ///      NFS3ERR_NOTEMPTY    = 66,
    ///      NFS3ERR_DQUOT       = 69,
    ///      NFS3ERR_STALE       = 70,
    ///      NFS3ERR_REMOTE      = 71,
    ///      NFS3ERR_BADHANDLE   = 10001,
    ///      NFS3ERR_NOT_SYNC    = 10002,
    ///      NFS3ERR_BAD_COOKIE  = 10003,
    ///      NFS3ERR_NOTSUPP     = 10004,
    ///      NFS3ERR_TOOSMALL    = 10005,
    ///      NFS3ERR_SERVERFAULT = 10006,
    ///      NFS3ERR_BADTYPE     = 10007,
    ///      NFS3ERR_JUKEBOX     = 10008
    /// };
    /// ```
    /// A value not listed here decodes fine and prints as `nfsstat3(0x…)`.
    nfsstat3 {
        NFS3_OK = 0,
        NFS3ERR_PERM = 1,
        NFS3ERR_NOENT = 2,
        NFS3ERR_IO = 5,
        NFS3ERR_NXIO = 6,
        NFS3ERR_ACCES = 13,
        NFS3ERR_EXIST = 17,
        NFS3ERR_XDEV = 18,
        NFS3ERR_NODEV = 19,
        NFS3ERR_NOTDIR = 20,
        NFS3ERR_ISDIR = 21,
        NFS3ERR_INVAL = 22,
        NFS3ERR_FBIG = 27,
        NFS3ERR_NOSPC = 28,
        NFS3ERR_ROFS = 30,
        NFS3ERR_MLINK = 31,
        NFS3ERR_NAMETOOLONG = 63,
        NFS3ERR_NOTEMPTY = 66,
        NFS3ERR_DQUOT = 69,
        NFS3ERR_STALE = 70,
        NFS3ERR_REMOTE = 71,
        NFS3ERR_BADHANDLE = 10001,
        NFS3ERR_NOT_SYNC = 10002,
        NFS3ERR_BAD_COOKIE = 10003,
        NFS3ERR_NOTSUPP = 10004,
        NFS3ERR_TOOSMALL = 10005,
        NFS3ERR_SERVERFAULT = 10006,
        NFS3ERR_BADTYPE = 10007,
        NFS3ERR_JUKEBOX = 10008,
    }
);

impl nfsstat3 {
    /// True for `NFS3_OK`.
    #[inline]
    pub fn is_ok(self) -> bool {
        self == nfsstat3::NFS3_OK
    }
}

wire_enum!(
    /// RFC 1813 §2.5
    /// ```text
    /// enum ftype3 {
    ///      NF3REG    = 1,
    ///      NF3DIR    = 2,
    ///      NF3BLK    = 3,
    ///      NF3CHR    = 4,
    ///      NF3LNK    = 5,
    ///      NF3SOCK   = 6,
    ///      NF3FIFO   = 7
    /// };
    /// ```
    ftype3 {
        NF3REG = 1,
        NF3DIR = 2,
        NF3BLK = 3,
        NF3CHR = 4,
        NF3LNK = 5,
        NF3SOCK = 6,
        NF3FIFO = 7,
    }
);

wire_enum!(
    /// RFC 1813 §3.3.7
    /// ```text
    /// enum stable_how {
    ///      UNSTABLE  = 0,
    ///      DATA_SYNC = 1,
    ///      FILE_SYNC = 2
    /// };
    /// ```
    stable_how {
        UNSTABLE = 0,
        DATA_SYNC = 1,
        FILE_SYNC = 2,
    }
);

wire_enum!(
    /// RFC 1813 §3.3.8
    /// ```text
    /// enum createmode3 {
    ///      UNCHECKED = 0,
    ///      GUARDED   = 1,
    ///      EXCLUSIVE = 2
    /// };
    /// ```
    createmode3 {
        UNCHECKED = 0,
        GUARDED = 1,
        EXCLUSIVE = 2,
    }
);

wire_enum!(
    /// RFC 1813 §2.5
    /// ```text
    /// enum time_how {
    ///      DONT_CHANGE        = 0,
    ///      SET_TO_SERVER_TIME = 1,
    ///      SET_TO_CLIENT_TIME = 2
    /// };
    /// ```
    time_how {
        DONT_CHANGE = 0,
        SET_TO_SERVER_TIME = 1,
        SET_TO_CLIENT_TIME = 2,
    }
);

/// RFC 1813 §2.5 `typedef uint64 fileid3;`
pub type fileid3 = u64;
/// RFC 1813 §2.5 `typedef uint64 cookie3;`
pub type cookie3 = u64;
/// RFC 1813 §2.5 `typedef uint32 uid3;`
pub type uid3 = u32;
/// RFC 1813 §2.5 `typedef uint32 gid3;`
pub type gid3 = u32;
/// RFC 1813 §2.5 `typedef uint64 size3;`
pub type size3 = u64;
/// RFC 1813 §2.5 `typedef uint64 offset3;`
pub type offset3 = u64;
/// RFC 1813 §2.5 `typedef uint32 mode3;`
pub type mode3 = u32;
/// RFC 1813 §2.5 `typedef uint32 count3;`
pub type count3 = u32;

/// Declares a fixed-size opaque (`typedef opaque X[N];`), stored inline;
/// `Debug` prints it in hex. Shared with NFSv4 (`verifier4`, `sessionid4`).
macro_rules! fixed_opaque {
    ($(#[$m:meta])* $name:ident, $n:expr) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
        #[allow(non_camel_case_types)]
        pub struct $name(pub [u8; $n]);

        impl ::std::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(concat!(stringify!($name), "("))?;
                for b in &self.0 {
                    write!(f, "{b:02x}")?;
                }
                f.write_str(")")
            }
        }
        impl $crate::xdr::Encode for $name {
            #[inline]
            fn encode(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.0);
            }
        }
        impl $crate::xdr::Decode for $name {
            #[inline]
            fn decode(
                r: &mut $crate::xdr::XdrReader<'_>,
            ) -> Result<Self, $crate::xdr::DecodeError> {
                Ok($name(*r.array::<$n>(stringify!($name))?))
            }
        }
    };
}
pub(crate) use fixed_opaque;

fixed_opaque!(
    /// RFC 1813 §2.5 `typedef opaque cookieverf3[NFS3_COOKIEVERFSIZE];`
    cookieverf3,
    NFS3_COOKIEVERFSIZE
);
fixed_opaque!(
    /// RFC 1813 §2.5 `typedef opaque createverf3[NFS3_CREATEVERFSIZE];`
    createverf3,
    NFS3_CREATEVERFSIZE
);
fixed_opaque!(
    /// RFC 1813 §2.5 `typedef opaque writeverf3[NFS3_WRITEVERFSIZE];`
    writeverf3,
    NFS3_WRITEVERFSIZE
);

/// Declares a byte-string newtype (`string X<MAX>`), bounded on decode.
/// Names are bytes, not necessarily UTF-8; `Debug` shows them lossily.
/// Encoding does not truncate: an over-long name is sent as is and the
/// server answers `NFS3ERR_NAMETOOLONG`, which is the error the caller
/// should see.
macro_rules! bounded_string {
    ($(#[$m:meta])* $name:ident, $max:expr) => {
        $(#[$m])*
        #[derive(Clone, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
        #[allow(non_camel_case_types)]
        pub struct $name(pub Vec<u8>);

        impl $name {
            /// The largest length accepted on decode.
            pub const MAX: usize = $max;
            /// The raw bytes.
            pub fn as_bytes(&self) -> &[u8] {
                &self.0
            }
        }
        impl ::std::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                write!(f, "{}({:?})", stringify!($name), String::from_utf8_lossy(&self.0))
            }
        }
        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                $name(s.as_bytes().to_vec())
            }
        }
        impl From<&[u8]> for $name {
            fn from(s: &[u8]) -> Self {
                $name(s.to_vec())
            }
        }
        impl From<Vec<u8>> for $name {
            fn from(s: Vec<u8>) -> Self {
                $name(s)
            }
        }
        impl $crate::xdr::Encode for $name {
            fn encode(&self, out: &mut Vec<u8>) {
                $crate::xdr::XdrWrite::put_opaque(out, &self.0);
            }
        }
        impl $crate::xdr::Decode for $name {
            fn decode(
                r: &mut $crate::xdr::XdrReader<'_>,
            ) -> Result<Self, $crate::xdr::DecodeError> {
                Ok($name(r.opaque($max, stringify!($name))?.to_vec()))
            }
        }
    };
}
pub(crate) use bounded_string;

bounded_string!(
    /// RFC 1813 §2.5 `typedef string filename3<>;` (bounded here by
    /// [`MAX_NAME_LEN`]).
    filename3,
    MAX_NAME_LEN
);
bounded_string!(
    /// RFC 1813 §2.5 `typedef string nfspath3<>;` (bounded here by
    /// [`MAX_PATH_LEN`]).
    nfspath3,
    MAX_PATH_LEN
);

/// Decodes an XDR linked list (`T *next` chains, RFC 4506 §4.19 optional
/// data) into a vector, iteratively, refusing more than `max` elements with
/// `DecodeError::TooLong { what, len: max + 1, max }`. Memory is bounded by
/// both `max` and the input, since every element consumes input bytes.
pub(crate) fn decode_list<T: Decode>(
    r: &mut XdrReader<'_>,
    max: usize,
    what: &'static str,
) -> Result<Vec<T>, DecodeError> {
    let mut items = Vec::new();
    while r.bool(what)? {
        if items.len() == max {
            return Err(DecodeError::TooLong {
                what,
                len: max as u64 + 1,
                max: max as u64,
            });
        }
        items.push(T::decode(r)?);
    }
    Ok(items)
}

/// Encodes a vector as an XDR linked list: `TRUE item` for each, then
/// `FALSE`.
pub(crate) fn encode_list<T: Encode>(items: &[T], out: &mut Vec<u8>) {
    for item in items {
        out.put_bool(true);
        item.encode(out);
    }
    out.put_bool(false);
}

/// RFC 1813 §2.5
/// ```text
/// struct specdata3 {
///      uint32     specdata1;
///      uint32     specdata2;
/// };
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[allow(non_camel_case_types)]
pub struct specdata3 {
    /// Major device number.
    pub specdata1: u32,
    /// Minor device number.
    pub specdata2: u32,
}

impl Encode for specdata3 {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.specdata1);
        out.put_u32(self.specdata2);
    }
}
impl Decode for specdata3 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            specdata1: r.u32("specdata3")?,
            specdata2: r.u32("specdata3")?,
        })
    }
}

/// RFC 1813 §2.5
/// ```text
/// struct nfstime3 {
///      uint32   seconds;
///      uint32   nseconds;
/// };
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
#[allow(non_camel_case_types)]
pub struct nfstime3 {
    /// Seconds since the epoch.
    pub seconds: u32,
    /// Nanoseconds.
    pub nseconds: u32,
}

impl Encode for nfstime3 {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.seconds);
        out.put_u32(self.nseconds);
    }
}
impl Decode for nfstime3 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            seconds: r.u32("nfstime3")?,
            nseconds: r.u32("nfstime3")?,
        })
    }
}

/// RFC 1813 §2.5
/// ```text
/// struct nfs_fh3 {
///      opaque       data<NFS3_FHSIZE>;
/// };
/// ```
/// Stored inline (no allocation): a handle is at most 64 bytes, and a
/// longer one is rejected on decode with
/// `DecodeError::TooLong { what: "nfs_fh3", .. }`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)]
pub struct nfs_fh3 {
    len: u8,
    /// Invariant: bytes past `len` are zero, so the derived `Eq`/`Hash`
    /// compare only the handle.
    data: [u8; NFS3_FHSIZE],
}

impl Default for nfs_fh3 {
    fn default() -> Self {
        Self {
            len: 0,
            data: [0; NFS3_FHSIZE],
        }
    }
}

impl nfs_fh3 {
    /// A handle from its bytes; fails if longer than 64 bytes.
    pub fn new(bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::named(bytes, "nfs_fh3")
    }

    /// Like [`new`](Self::new), naming the type in the error (MOUNT's
    /// `fhandle3` shares this representation).
    pub(crate) fn named(bytes: &[u8], what: &'static str) -> Result<Self, DecodeError> {
        if bytes.len() > NFS3_FHSIZE {
            return Err(DecodeError::TooLong {
                what,
                len: bytes.len() as u64,
                max: NFS3_FHSIZE as u64,
            });
        }
        let mut data = [0u8; NFS3_FHSIZE];
        data[..bytes.len()].copy_from_slice(bytes);
        Ok(Self {
            len: bytes.len() as u8,
            data,
        })
    }

    /// The handle bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.data[..self.len as usize]
    }

    /// Length in bytes (0..=64).
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True for the zero-length handle.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn decode_named(
        r: &mut XdrReader<'_>,
        what: &'static str,
    ) -> Result<Self, DecodeError> {
        Self::named(r.opaque(NFS3_FHSIZE, what)?, what)
    }
}

impl AsRef<[u8]> for nfs_fh3 {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl fmt::Debug for nfs_fh3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("nfs_fh3(")?;
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        f.write_str(")")
    }
}

impl Encode for nfs_fh3 {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_opaque(self.as_bytes());
    }
}
impl Decode for nfs_fh3 {
    #[inline]
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Self::decode_named(r, "nfs_fh3")
    }
}

/// RFC 1813 §2.5
/// ```text
/// struct diropargs3 {
///      nfs_fh3     dir;
///      filename3   name;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[allow(non_camel_case_types)]
pub struct diropargs3 {
    /// The directory.
    pub dir: nfs_fh3,
    /// The name in it.
    pub name: filename3,
}

impl Encode for diropargs3 {
    fn encode(&self, out: &mut Vec<u8>) {
        self.dir.encode(out);
        self.name.encode(out);
    }
}
impl Decode for diropargs3 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            dir: nfs_fh3::decode(r)?,
            name: filename3::decode(r)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xdr::{decode_exact, to_bytes};

    #[test]
    fn rejects_fh_longer_than_64() {
        let mut v = Vec::new();
        v.put_opaque(&[1u8; 65]);
        assert_eq!(
            decode_exact::<nfs_fh3>(&v, "fh").unwrap_err(),
            DecodeError::TooLong {
                what: "nfs_fh3",
                len: 65,
                max: 64
            }
        );
        assert!(nfs_fh3::new(&[0; 65]).is_err());
    }

    #[test]
    fn fh_of_64_bytes_roundtrips_and_compares_by_content() {
        let fh = nfs_fh3::new(&[7u8; 64]).unwrap();
        assert_eq!(decode_exact::<nfs_fh3>(&to_bytes(&fh), "fh").unwrap(), fh);
        assert_ne!(
            nfs_fh3::new(&[7u8; 3]).unwrap(),
            nfs_fh3::new(&[7u8; 4]).unwrap()
        );
        assert_eq!(
            format!("{:?}", nfs_fh3::new(&[0xab, 1]).unwrap()),
            "nfs_fh3(ab01)"
        );
    }

    #[test]
    fn rejects_name_longer_than_255() {
        let mut v = Vec::new();
        v.put_opaque(&[b'a'; 256]);
        assert!(matches!(
            decode_exact::<filename3>(&v, "name"),
            Err(DecodeError::TooLong {
                what: "filename3",
                len: 256,
                max: 255
            })
        ));
    }

    #[test]
    fn unknown_nfsstat_prints_in_hex() {
        assert_eq!(format!("{:?}", nfsstat3(12345)), "nfsstat3(0x3039)");
        assert_eq!(format!("{}", nfsstat3::NFS3ERR_JUKEBOX), "NFS3ERR_JUKEBOX");
    }
}
