//! RFC 8881 §5 file attributes: `fattr4`, decoded by its bitmap.
//!
//! On the wire an `fattr4` is a bitmap of attribute numbers and an opaque
//! `attrlist4` holding the values of the set bits, in increasing bit
//! order, each in its own XDR type (RFC 8881 §3.3.7). The only way to find
//! where one value ends is to know its type, so the decoder walks the bits
//! in order and decodes each value it knows; the first bit it does not
//! know is an error (`BadDiscriminant { what: "fattr4 attribute ...",
//! value: bit }`), never a guess: the values after it could not be found.
//! A server sends only the attributes that were asked for, so a client
//! that asks only for attributes of this table never meets that error.
//! The `attrlist4` must be used up exactly.

use super::types::{
    bitmap4, changeid4, fsid4, mode4, nfs_fh4, nfs_ftype4, nfsstat4, nfstime4, settime4, specdata4,
    utf8str_mixed,
};
use crate::xdr::{Decode, DecodeError, Encode, XdrReader, XdrWrite};

/// Bound on an `attrlist4`. The attributes of the table below take at
/// most about 2.5 KiB (two 1 KiB owner strings and a 128-byte handle);
/// 64 KiB leaves room and still bounds a hostile length.
pub const MAX_ATTRLIST_LEN: usize = 64 << 10;

/// Declares the attribute table: one `FATTR4_*` constant, one optional
/// field of `fattr4` and one arm of the decoder per row. Rows are in
/// increasing bit order, the order of the values on the wire (a test
/// checks).
macro_rules! fattr4_table {
    ($( $(#[$doc:meta])* $bit:literal $konst:ident $field:ident : $ty:ty; )*) => {
        $(
            #[doc = concat!("RFC 8881 §5 attribute number of `", stringify!($field), "`.")]
            pub const $konst: u32 = $bit;
        )*

        /// The attribute numbers this crate decodes, in increasing order.
        pub const FATTR4_DECODED: &[u32] = &[$($bit),*];

        /// RFC 8881 §3.3.7 / §5
        /// ```text
        /// struct fattr4 {
        ///         bitmap4         attrmask;
        ///         attrlist4       attr_vals;
        /// };
        /// ```
        /// Decoded: one optional field per attribute, `Some` exactly when
        /// its bit was set. Encoding writes the bitmap of the `Some`
        /// fields (as few words as needed) and their values in bit order.
        /// The field types are those of RFC 5662's `fattr4_*` typedefs.
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        #[allow(non_camel_case_types)]
        pub struct fattr4 {
            $( $(#[$doc])* pub $field: Option<$ty>, )*
        }

        impl fattr4 {
            /// The bitmap of the attributes present.
            pub fn attrmask(&self) -> bitmap4 {
                let mut mask = bitmap4::EMPTY;
                $( if self.$field.is_some() { mask.set($bit); } )*
                mask
            }

            /// Appends the values present, in bit order (the `attrlist4`
            /// contents, without its length).
            fn encode_values(&self, out: &mut Vec<u8>) {
                $( if let Some(v) = &self.$field { v.encode(out); } )*
            }

            /// Decodes the value of attribute `bit`; `Ok(false)` when this
            /// crate does not know its type.
            fn decode_value(&mut self, bit: u32, r: &mut XdrReader<'_>) -> Result<bool, DecodeError> {
                match bit {
                    $( $bit => self.$field = Some(<$ty as Decode>::decode(r)?), )*
                    _ => return Ok(false),
                }
                Ok(true)
            }
        }
    };
}

fattr4_table! {
    /// `supported_attrs` (REQUIRED): the attributes the server supports.
    0 FATTR4_SUPPORTED_ATTRS supported_attrs: bitmap4;
    /// `type` (REQUIRED).
    1 FATTR4_TYPE type_: nfs_ftype4;
    /// `fh_expire_type` (REQUIRED): `FH4_*` bits; 0 is persistent handles.
    2 FATTR4_FH_EXPIRE_TYPE fh_expire_type: u32;
    /// `change` (REQUIRED): changes whenever data or attributes change.
    3 FATTR4_CHANGE change: changeid4;
    /// `size` (REQUIRED), in bytes.
    4 FATTR4_SIZE size: u64;
    /// `link_support` (REQUIRED): hard links supported.
    5 FATTR4_LINK_SUPPORT link_support: bool;
    /// `symlink_support` (REQUIRED).
    6 FATTR4_SYMLINK_SUPPORT symlink_support: bool;
    /// `named_attr` (REQUIRED): the object has named attributes.
    7 FATTR4_NAMED_ATTR named_attr: bool;
    /// `fsid` (REQUIRED): the file system of the object.
    8 FATTR4_FSID fsid: fsid4;
    /// `unique_handles` (REQUIRED).
    9 FATTR4_UNIQUE_HANDLES unique_handles: bool;
    /// `lease_time` (REQUIRED): the lease in seconds.
    10 FATTR4_LEASE_TIME lease_time: u32;
    /// `rdattr_error` (REQUIRED): in READDIR, why an entry's attributes
    /// could not be read.
    11 FATTR4_RDATTR_ERROR rdattr_error: nfsstat4;
    /// `aclsupport` (RECOMMENDED): `ACL4_SUPPORT_*` bits.
    13 FATTR4_ACLSUPPORT aclsupport: u32;
    /// `cansettime` (RECOMMENDED).
    15 FATTR4_CANSETTIME cansettime: bool;
    /// `case_insensitive` (RECOMMENDED).
    16 FATTR4_CASE_INSENSITIVE case_insensitive: bool;
    /// `case_preserving` (RECOMMENDED).
    17 FATTR4_CASE_PRESERVING case_preserving: bool;
    /// `chown_restricted` (RECOMMENDED).
    18 FATTR4_CHOWN_RESTRICTED chown_restricted: bool;
    /// `filehandle` (REQUIRED).
    19 FATTR4_FILEHANDLE filehandle: nfs_fh4;
    /// `fileid` (RECOMMENDED): the inode number.
    20 FATTR4_FILEID fileid: u64;
    /// `files_avail` (RECOMMENDED).
    21 FATTR4_FILES_AVAIL files_avail: u64;
    /// `files_free` (RECOMMENDED).
    22 FATTR4_FILES_FREE files_free: u64;
    /// `files_total` (RECOMMENDED).
    23 FATTR4_FILES_TOTAL files_total: u64;
    /// `homogeneous` (RECOMMENDED).
    26 FATTR4_HOMOGENEOUS homogeneous: bool;
    /// `maxfilesize` (RECOMMENDED), in bytes.
    27 FATTR4_MAXFILESIZE maxfilesize: u64;
    /// `maxlink` (RECOMMENDED).
    28 FATTR4_MAXLINK maxlink: u32;
    /// `maxname` (RECOMMENDED).
    29 FATTR4_MAXNAME maxname: u32;
    /// `maxread` (RECOMMENDED): the largest READ count, in bytes.
    30 FATTR4_MAXREAD maxread: u64;
    /// `maxwrite` (RECOMMENDED): the largest WRITE count, in bytes.
    31 FATTR4_MAXWRITE maxwrite: u64;
    /// `mode` (RECOMMENDED): `MODE4_*` permission bits.
    33 FATTR4_MODE mode: mode4;
    /// `no_trunc` (RECOMMENDED).
    34 FATTR4_NO_TRUNC no_trunc: bool;
    /// `numlinks` (RECOMMENDED).
    35 FATTR4_NUMLINKS numlinks: u32;
    /// `owner` (RECOMMENDED): `user@domain`, or a number as a string when
    /// the server sends numeric ids.
    36 FATTR4_OWNER owner: utf8str_mixed;
    /// `owner_group` (RECOMMENDED): like `owner`.
    37 FATTR4_OWNER_GROUP owner_group: utf8str_mixed;
    /// `rawdev` (RECOMMENDED).
    41 FATTR4_RAWDEV rawdev: specdata4;
    /// `space_avail` (RECOMMENDED), in bytes.
    42 FATTR4_SPACE_AVAIL space_avail: u64;
    /// `space_free` (RECOMMENDED), in bytes.
    43 FATTR4_SPACE_FREE space_free: u64;
    /// `space_total` (RECOMMENDED), in bytes.
    44 FATTR4_SPACE_TOTAL space_total: u64;
    /// `space_used` (RECOMMENDED): bytes the object takes on disk.
    45 FATTR4_SPACE_USED space_used: u64;
    /// `time_access` (RECOMMENDED).
    47 FATTR4_TIME_ACCESS time_access: nfstime4;
    /// `time_access_set` (RECOMMENDED, write-only: SETATTR, OPEN, CREATE).
    48 FATTR4_TIME_ACCESS_SET time_access_set: settime4;
    /// `time_delta` (RECOMMENDED): the server's time granularity.
    51 FATTR4_TIME_DELTA time_delta: nfstime4;
    /// `time_metadata` (RECOMMENDED): the ctime.
    52 FATTR4_TIME_METADATA time_metadata: nfstime4;
    /// `time_modify` (RECOMMENDED): the mtime.
    53 FATTR4_TIME_MODIFY time_modify: nfstime4;
    /// `time_modify_set` (RECOMMENDED, write-only).
    54 FATTR4_TIME_MODIFY_SET time_modify_set: settime4;
    /// `mounted_on_fileid` (RECOMMENDED).
    55 FATTR4_MOUNTED_ON_FILEID mounted_on_fileid: u64;
    /// `suppattr_exclcreat` (REQUIRED in NFSv4.1): the attributes an
    /// EXCLUSIVE4_1 create can set.
    75 FATTR4_SUPPATTR_EXCLCREAT suppattr_exclcreat: bitmap4;
}

/// The attributes a file API's `stat` needs: type, change, size, fsid,
/// fileid, mode, numlinks, owner, owner_group, space_used and the times.
pub const STAT_ATTRS: &[u32] = &[
    FATTR4_TYPE,
    FATTR4_CHANGE,
    FATTR4_SIZE,
    FATTR4_FSID,
    FATTR4_FILEID,
    FATTR4_MODE,
    FATTR4_NUMLINKS,
    FATTR4_OWNER,
    FATTR4_OWNER_GROUP,
    FATTR4_SPACE_USED,
    FATTR4_TIME_ACCESS,
    FATTR4_TIME_METADATA,
    FATTR4_TIME_MODIFY,
];

/// The attributes a client asks of a file system once (the v3 FSINFO):
/// supported attributes, lease time and transfer and file size limits.
pub const FS_ATTRS: &[u32] = &[
    FATTR4_SUPPORTED_ATTRS,
    FATTR4_FSID,
    FATTR4_LEASE_TIME,
    FATTR4_MAXFILESIZE,
    FATTR4_MAXREAD,
    FATTR4_MAXWRITE,
];

impl Encode for fattr4 {
    fn encode(&self, out: &mut Vec<u8>) {
        self.attrmask().encode(out);
        // attrlist4 is opaque<>: its length first. Every value is a whole
        // number of XDR units, so there is never padding to add.
        let at = out.len();
        out.put_u32(0);
        self.encode_values(out);
        let len = (out.len() - at - 4) as u32;
        out[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }
}

impl Decode for fattr4 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        let mask = bitmap4::decode(r)?;
        let vals = r.opaque(MAX_ATTRLIST_LEN, "attrlist4")?;
        decode_attrlist(&mask, vals)
    }
}

/// Decodes the values of `mask`'s attributes from an `attrlist4`'s bytes:
/// see the module documentation.
pub fn decode_attrlist(mask: &bitmap4, vals: &[u8]) -> Result<fattr4, DecodeError> {
    let mut attrs = fattr4::default();
    let mut r = XdrReader::new(vals);
    for bit in mask.iter() {
        if !attrs.decode_value(bit, &mut r)? {
            return Err(DecodeError::BadDiscriminant {
                what: "fattr4 attribute (no decoder knows its size)",
                value: bit,
            });
        }
    }
    r.finish("attrlist4")?;
    Ok(attrs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nfs4::types::utf8string;
    use crate::xdr::{decode_exact, to_bytes};

    #[test]
    fn table_is_in_wire_order() {
        assert!(FATTR4_DECODED.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn values_follow_in_bit_order_whatever_order_they_were_set() {
        let a = fattr4 {
            size: Some(0x1122),
            type_: Some(nfs_ftype4::NF4REG),
            mode: Some(0o640),
            ..Default::default()
        };
        let b = to_bytes(&a);
        #[rustfmt::skip]
        let expect: Vec<u8> = [
            2u32, 0x12, 0x2,            // bitmap: type(1) size(4) | mode(33)
            16,                         // attrlist4 length
            1,                          // NF4REG
            0, 0x1122,                  // size
            0o640,                      // mode
        ].iter().flat_map(|w| w.to_be_bytes()).collect();
        assert_eq!(b, expect);
        assert_eq!(decode_exact::<fattr4>(&b, "fattr4").unwrap(), a);
    }

    #[test]
    fn unknown_attribute_is_an_error_not_a_skip() {
        // acl (12) has a variable size this decoder does not parse.
        let mut b = Vec::new();
        bitmap4::from_bits(&[FATTR4_TYPE, 12]).encode(&mut b);
        b.put_opaque(&[0, 0, 0, 1, 0, 0, 0, 0]);
        assert_eq!(
            decode_exact::<fattr4>(&b, "fattr4").unwrap_err(),
            DecodeError::BadDiscriminant {
                what: "fattr4 attribute (no decoder knows its size)",
                value: 12
            }
        );
    }

    #[test]
    fn attrlist_must_be_used_up_exactly() {
        let mut b = Vec::new();
        bitmap4::from_bits(&[FATTR4_SIZE]).encode(&mut b);
        b.put_opaque(&[0; 12]);
        assert!(matches!(
            decode_exact::<fattr4>(&b, "fattr4"),
            Err(DecodeError::Trailing {
                what: "attrlist4",
                len: 4
            })
        ));
        let mut b = Vec::new();
        bitmap4::from_bits(&[FATTR4_SIZE]).encode(&mut b);
        b.put_opaque(&[0; 4]);
        assert!(matches!(
            decode_exact::<fattr4>(&b, "fattr4"),
            Err(DecodeError::Truncated { .. })
        ));
    }

    #[test]
    fn owner_strings_are_bounded() {
        let a = fattr4 {
            owner: Some(utf8string(vec![b'x'; 1025])),
            ..Default::default()
        };
        assert!(matches!(
            decode_exact::<fattr4>(&to_bytes(&a), "fattr4"),
            Err(DecodeError::TooLong {
                what: "utf8string",
                ..
            })
        ));
    }
}
