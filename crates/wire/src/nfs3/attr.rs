//! RFC 1813 §2.5 attribute types: `fattr3` and the optional and
//! weak-cache-consistency wrappers around it, and `sattr3` for setting
//! attributes.

use super::types::{
    fileid3, ftype3, gid3, mode3, nfs_fh3, nfstime3, size3, specdata3, time_how, uid3,
};
use crate::xdr::{Decode, DecodeError, Encode, XdrReader, XdrWrite};

/// Size of an encoded `fattr3` in bytes (it has no variable-length parts).
pub const FATTR3_SIZE: usize = 84;

/// RFC 1813 §2.5
/// ```text
/// struct fattr3 {
///      ftype3     type;
///      mode3      mode;
///      uint32     nlink;
///      uid3       uid;
///      gid3       gid;
///      size3      size;
///      size3      used;
///      specdata3  rdev;
///      uint64     fsid;
///      fileid3    fileid;
///      nfstime3   atime;
///      nfstime3   mtime;
///      nfstime3   ctime;
/// };
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)]
pub struct fattr3 {
    /// File type (`type` in the RFC).
    pub type_: ftype3,
    /// Protection mode bits.
    pub mode: mode3,
    /// Number of hard links.
    pub nlink: u32,
    /// Owner.
    pub uid: uid3,
    /// Group.
    pub gid: gid3,
    /// Size in bytes.
    pub size: size3,
    /// Disk space used, in bytes.
    pub used: size3,
    /// Device numbers, for NF3BLK and NF3CHR.
    pub rdev: specdata3,
    /// File system id.
    pub fsid: u64,
    /// File id (inode number).
    pub fileid: fileid3,
    /// Last access.
    pub atime: nfstime3,
    /// Last modification of the data.
    pub mtime: nfstime3,
    /// Last change of the attributes.
    pub ctime: nfstime3,
}

impl Encode for fattr3 {
    fn encode(&self, out: &mut Vec<u8>) {
        self.type_.encode(out);
        out.put_u32(self.mode);
        out.put_u32(self.nlink);
        out.put_u32(self.uid);
        out.put_u32(self.gid);
        out.put_u64(self.size);
        out.put_u64(self.used);
        self.rdev.encode(out);
        out.put_u64(self.fsid);
        out.put_u64(self.fileid);
        self.atime.encode(out);
        self.mtime.encode(out);
        self.ctime.encode(out);
    }
}

impl Decode for fattr3 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        // One bounds check for the whole fixed-size structure, then plain
        // loads from a fixed-size array (no per-field checks: this runs for
        // every READ and WRITE reply).
        let b: &[u8; FATTR3_SIZE] = r.array("fattr3")?;
        Ok(Self {
            type_: ftype3(be32(b, 0)),
            mode: be32(b, 4),
            nlink: be32(b, 8),
            uid: be32(b, 12),
            gid: be32(b, 16),
            size: be64(b, 20),
            used: be64(b, 28),
            rdev: specdata3 {
                specdata1: be32(b, 36),
                specdata2: be32(b, 40),
            },
            fsid: be64(b, 44),
            fileid: be64(b, 52),
            atime: time3(b, 60),
            mtime: time3(b, 68),
            ctime: time3(b, 76),
        })
    }
}

/// The big-endian word at byte `i` of a fixed-size block.
#[inline(always)]
fn be32<const N: usize>(b: &[u8; N], i: usize) -> u32 {
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// The big-endian hyper at byte `i` of a fixed-size block.
#[inline(always)]
fn be64<const N: usize>(b: &[u8; N], i: usize) -> u64 {
    (u64::from(be32(b, i)) << 32) | u64::from(be32(b, i + 4))
}

/// The `nfstime3` at byte `i` of a fixed-size block.
#[inline(always)]
fn time3<const N: usize>(b: &[u8; N], i: usize) -> nfstime3 {
    nfstime3 {
        seconds: be32(b, i),
        nseconds: be32(b, i + 4),
    }
}

/// RFC 1813 §2.5
/// ```text
/// union post_op_attr switch (bool attributes_follow) {
/// case TRUE:
///      fattr3   attributes;
/// case FALSE:
///      void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type post_op_attr = Option<fattr3>;

/// RFC 1813 §2.5
/// ```text
/// struct wcc_attr {
///      size3       size;
///      nfstime3    mtime;
///      nfstime3    ctime;
/// };
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[allow(non_camel_case_types)]
pub struct wcc_attr {
    /// Size before the operation.
    pub size: size3,
    /// Modification time before the operation.
    pub mtime: nfstime3,
    /// Change time before the operation.
    pub ctime: nfstime3,
}

impl Encode for wcc_attr {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64(self.size);
        self.mtime.encode(out);
        self.ctime.encode(out);
    }
}
impl Decode for wcc_attr {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        let b: &[u8; 24] = r.array("wcc_attr")?;
        Ok(Self {
            size: be64(b, 0),
            mtime: time3(b, 8),
            ctime: time3(b, 16),
        })
    }
}

/// RFC 1813 §2.5
/// ```text
/// union pre_op_attr switch (bool attributes_follow) {
/// case TRUE:
///      wcc_attr  attributes;
/// case FALSE:
///      void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type pre_op_attr = Option<wcc_attr>;

/// RFC 1813 §2.5
/// ```text
/// struct wcc_data {
///      pre_op_attr    before;
///      post_op_attr   after;
/// };
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[allow(non_camel_case_types)]
pub struct wcc_data {
    /// Attributes before the operation, if the server kept them.
    pub before: pre_op_attr,
    /// Attributes after the operation, if the server sent them.
    pub after: post_op_attr,
}

impl Encode for wcc_data {
    fn encode(&self, out: &mut Vec<u8>) {
        self.before.encode(out);
        self.after.encode(out);
    }
}
impl Decode for wcc_data {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            before: pre_op_attr::decode(r)?,
            after: post_op_attr::decode(r)?,
        })
    }
}

/// RFC 1813 §2.5
/// ```text
/// union post_op_fh3 switch (bool handle_follows) {
/// case TRUE:
///      nfs_fh3  handle;
/// case FALSE:
///      void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type post_op_fh3 = Option<nfs_fh3>;

/// RFC 1813 §2.5
/// ```text
/// union set_mode3 switch (bool set_it) {
/// case TRUE:
///      mode3    mode;
/// default:
///      void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type set_mode3 = Option<mode3>;
/// RFC 1813 §2.5 `union set_uid3 switch (bool set_it) { case TRUE: uid3 uid; default: void; };`
#[allow(non_camel_case_types)]
pub type set_uid3 = Option<uid3>;
/// RFC 1813 §2.5 `union set_gid3 switch (bool set_it) { case TRUE: gid3 gid; default: void; };`
#[allow(non_camel_case_types)]
pub type set_gid3 = Option<gid3>;
/// RFC 1813 §2.5 `union set_size3 switch (bool set_it) { case TRUE: size3 size; default: void; };`
#[allow(non_camel_case_types)]
pub type set_size3 = Option<size3>;

/// RFC 1813 §2.5
/// ```text
/// union set_atime switch (time_how set_it) {
/// case SET_TO_CLIENT_TIME:
///      nfstime3  atime;
/// default:
///      void;
/// };
/// union set_mtime switch (time_how set_it) {
/// case SET_TO_CLIENT_TIME:
///      nfstime3  mtime;
/// default:
///      void;
/// };
/// ```
/// A `time_how` other than the three the RFC defines is refused on decode
/// (`BadDiscriminant`): it can only come from a broken client, and guessing
/// its meaning would change file times silently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SetTime {
    /// `DONT_CHANGE`.
    #[default]
    DontChange,
    /// `SET_TO_SERVER_TIME`.
    SetToServerTime,
    /// `SET_TO_CLIENT_TIME` with the time.
    SetToClientTime(nfstime3),
}
/// RFC 1813 §2.5 `set_atime` (see [`SetTime`]).
#[allow(non_camel_case_types)]
pub type set_atime = SetTime;
/// RFC 1813 §2.5 `set_mtime` (see [`SetTime`]).
#[allow(non_camel_case_types)]
pub type set_mtime = SetTime;

impl Encode for SetTime {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            SetTime::DontChange => time_how::DONT_CHANGE.encode(out),
            SetTime::SetToServerTime => time_how::SET_TO_SERVER_TIME.encode(out),
            SetTime::SetToClientTime(t) => {
                time_how::SET_TO_CLIENT_TIME.encode(out);
                t.encode(out);
            }
        }
    }
}
impl Decode for SetTime {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        match time_how::decode(r)? {
            time_how::DONT_CHANGE => Ok(SetTime::DontChange),
            time_how::SET_TO_SERVER_TIME => Ok(SetTime::SetToServerTime),
            time_how::SET_TO_CLIENT_TIME => Ok(SetTime::SetToClientTime(nfstime3::decode(r)?)),
            other => Err(DecodeError::BadDiscriminant {
                what: "time_how",
                value: other.0,
            }),
        }
    }
}

/// RFC 1813 §2.5
/// ```text
/// struct sattr3 {
///      set_mode3   mode;
///      set_uid3    uid;
///      set_gid3    gid;
///      set_size3   size;
///      set_atime   atime;
///      set_mtime   mtime;
/// };
/// ```
/// `sattr3::default()` changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[allow(non_camel_case_types)]
pub struct sattr3 {
    /// New mode bits.
    pub mode: set_mode3,
    /// New owner.
    pub uid: set_uid3,
    /// New group.
    pub gid: set_gid3,
    /// New size (truncate or extend).
    pub size: set_size3,
    /// New access time.
    pub atime: set_atime,
    /// New modification time.
    pub mtime: set_mtime,
}

impl Encode for sattr3 {
    fn encode(&self, out: &mut Vec<u8>) {
        self.mode.encode(out);
        self.uid.encode(out);
        self.gid.encode(out);
        self.size.encode(out);
        self.atime.encode(out);
        self.mtime.encode(out);
    }
}
impl Decode for sattr3 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            mode: set_mode3::decode(r)?,
            uid: set_uid3::decode(r)?,
            gid: set_gid3::decode(r)?,
            size: set_size3::decode(r)?,
            atime: set_atime::decode(r)?,
            mtime: set_mtime::decode(r)?,
        })
    }
}

/// RFC 1813 §3.3.2
/// ```text
/// union sattrguard3 switch (bool check) {
/// case TRUE:
///      nfstime3  obj_ctime;
/// case FALSE:
///      void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type sattrguard3 = Option<nfstime3>;
