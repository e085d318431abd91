//! Byte-range locks (RFC 8881 §9, §18.10 LOCK, §18.11 LOCKT, §18.12
//! LOCKU). In NFSv4.1 the `seqid` fields are ignored (sent as 0): the
//! session's slots order the requests.

use super::types::{length4, lock_owner4, nfsstat4, offset4, seqid4, stateid4};
use crate::nfs3::types::xdr_struct;
use crate::wire_enum;
use crate::xdr::{Decode, DecodeError, Encode, XdrReader, XdrWrite};

wire_enum!(
    /// RFC 8881 §3.3.11 (the `W` types ask the server to queue the client
    /// fairly while it polls, RFC 8881 §9.6)
    /// ```text
    /// enum nfs_lock_type4 {
    ///         READ_LT         = 1,
    ///         WRITE_LT        = 2,
    ///         READW_LT        = 3,    /* blocking read */
    ///         WRITEW_LT       = 4     /* blocking write */
    /// };
    /// ```
    nfs_lock_type4 {
        READ_LT = 1,
        WRITE_LT = 2,
        READW_LT = 3,
        WRITEW_LT = 4,
    }
);

xdr_struct!(
    /// RFC 8881 §18.10.1
    /// ```text
    /// struct open_to_lock_owner4 {
    ///         seqid4          open_seqid;
    ///         stateid4        open_stateid;
    ///         seqid4          lock_seqid;
    ///         lock_owner4     lock_owner;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct open_to_lock_owner4 {
        /// 0 in NFSv4.1.
        pub open_seqid: seqid4,
        /// The open the lock is taken under.
        pub open_stateid: stateid4,
        /// 0 in NFSv4.1.
        pub lock_seqid: seqid4,
        /// The new lock owner.
        pub lock_owner: lock_owner4,
    }
);

xdr_struct!(
    /// RFC 8881 §18.10.1
    /// ```text
    /// struct exist_lock_owner4 {
    ///         stateid4        lock_stateid;
    ///         seqid4          lock_seqid;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct exist_lock_owner4 {
        /// The lock stateid of an earlier LOCK by this owner on this file.
        pub lock_stateid: stateid4,
        /// 0 in NFSv4.1.
        pub lock_seqid: seqid4,
    }
);

/// RFC 8881 §18.10.1
/// ```text
/// union locker4 switch (bool new_lock_owner) {
///  case TRUE:
///         open_to_lock_owner4     open_owner;
///  case FALSE:
///         exist_lock_owner4       lock_owner;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum locker4 {
    /// The first lock of this owner on this file (`new_lock_owner` TRUE).
    open_owner(open_to_lock_owner4),
    /// A lock owner that already has a lock stateid for the file.
    lock_owner(exist_lock_owner4),
}

impl Encode for locker4 {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            locker4::open_owner(o) => {
                out.put_bool(true);
                o.encode(out);
            }
            locker4::lock_owner(l) => {
                out.put_bool(false);
                l.encode(out);
            }
        }
    }
}
impl Decode for locker4 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        if r.bool("new_lock_owner")? {
            Ok(locker4::open_owner(open_to_lock_owner4::decode(r)?))
        } else {
            Ok(locker4::lock_owner(exist_lock_owner4::decode(r)?))
        }
    }
}

xdr_struct!(
    /// RFC 8881 §18.10.1
    /// ```text
    /// struct LOCK4args {
    ///         /* CURRENT_FH: file */
    ///         nfs_lock_type4  locktype;
    ///         bool            reclaim;
    ///         offset4         offset;
    ///         length4         length;
    ///         locker4         locker;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct LOCK4args {
        /// Shared or exclusive, blocking or not.
        pub locktype: nfs_lock_type4,
        /// True to reclaim a lock held before a server restart (grace
        /// period only).
        pub reclaim: bool,
        /// First byte.
        pub offset: offset4,
        /// Bytes; `NFS4_UINT64_MAX` means to the end of the file.
        pub length: length4,
        /// Who locks.
        pub locker: locker4,
    }
);

xdr_struct!(
    /// RFC 8881 §18.10.2
    /// ```text
    /// struct LOCK4denied {
    ///         offset4         offset;
    ///         length4         length;
    ///         nfs_lock_type4  locktype;
    ///         lock_owner4     owner;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct LOCK4denied {
        /// Start of a conflicting lock.
        pub offset: offset4,
        /// Its length.
        pub length: length4,
        /// Its type.
        pub locktype: nfs_lock_type4,
        /// Its owner.
        pub owner: lock_owner4,
    }
);

/// RFC 8881 §18.10.2
/// ```text
/// struct LOCK4resok {
///         stateid4        lock_stateid;
/// };
/// union LOCK4res switch (nfsstat4 status) {
///  case NFS4_OK:
///          LOCK4resok     resok4;
///  case NFS4ERR_DENIED:
///          LOCK4denied    denied;
///  default:
///          void;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum LOCK4res {
    /// Granted: the lock stateid (`LOCK4resok`).
    Ok(stateid4),
    /// `NFS4ERR_DENIED`: a conflicting lock.
    Denied(LOCK4denied),
    /// Any other status (not `NFS4_OK`, not `NFS4ERR_DENIED`).
    Fail(nfsstat4),
}

impl LOCK4res {
    /// The status on the wire.
    pub fn status(&self) -> nfsstat4 {
        match self {
            LOCK4res::Ok(_) => nfsstat4::NFS4_OK,
            LOCK4res::Denied(_) => nfsstat4::NFS4ERR_DENIED,
            LOCK4res::Fail(s) => *s,
        }
    }
}

impl Encode for LOCK4res {
    fn encode(&self, out: &mut Vec<u8>) {
        self.status().encode(out);
        match self {
            LOCK4res::Ok(s) => s.encode(out),
            LOCK4res::Denied(d) => d.encode(out),
            LOCK4res::Fail(s) => debug_assert!(
                !matches!(*s, nfsstat4::NFS4_OK | nfsstat4::NFS4ERR_DENIED),
                "LOCK4res::Fail with a status that has an arm"
            ),
        }
    }
}
impl Decode for LOCK4res {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(match nfsstat4::decode(r)? {
            nfsstat4::NFS4_OK => LOCK4res::Ok(stateid4::decode(r)?),
            nfsstat4::NFS4ERR_DENIED => LOCK4res::Denied(LOCK4denied::decode(r)?),
            other => LOCK4res::Fail(other),
        })
    }
}

xdr_struct!(
    /// RFC 8881 §18.11.1
    /// ```text
    /// struct LOCKT4args {
    ///         /* CURRENT_FH: file */
    ///         nfs_lock_type4  locktype;
    ///         offset4         offset;
    ///         length4         length;
    ///         lock_owner4     owner;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct LOCKT4args {
        /// The lock that would be asked for.
        pub locktype: nfs_lock_type4,
        /// First byte.
        pub offset: offset4,
        /// Bytes.
        pub length: length4,
        /// Who would ask (its own locks never conflict).
        pub owner: lock_owner4,
    }
);

/// RFC 8881 §18.11.2
/// ```text
/// union LOCKT4res switch (nfsstat4 status) {
///  case NFS4ERR_DENIED:
///          LOCK4denied    denied;
///  case NFS4_OK:
///          void;
///  default:
///          void;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum LOCKT4res {
    /// No conflicting lock.
    Ok,
    /// `NFS4ERR_DENIED`: a conflicting lock.
    Denied(LOCK4denied),
    /// Any other status.
    Fail(nfsstat4),
}

impl LOCKT4res {
    /// The status on the wire.
    pub fn status(&self) -> nfsstat4 {
        match self {
            LOCKT4res::Ok => nfsstat4::NFS4_OK,
            LOCKT4res::Denied(_) => nfsstat4::NFS4ERR_DENIED,
            LOCKT4res::Fail(s) => *s,
        }
    }
}

impl Encode for LOCKT4res {
    fn encode(&self, out: &mut Vec<u8>) {
        self.status().encode(out);
        if let LOCKT4res::Denied(d) = self {
            d.encode(out);
        }
    }
}
impl Decode for LOCKT4res {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(match nfsstat4::decode(r)? {
            nfsstat4::NFS4_OK => LOCKT4res::Ok,
            nfsstat4::NFS4ERR_DENIED => LOCKT4res::Denied(LOCK4denied::decode(r)?),
            other => LOCKT4res::Fail(other),
        })
    }
}

xdr_struct!(
    /// RFC 8881 §18.12.1
    /// ```text
    /// struct LOCKU4args {
    ///         /* CURRENT_FH: file */
    ///         nfs_lock_type4  locktype;
    ///         seqid4          seqid;
    ///         stateid4        lock_stateid;
    ///         offset4         offset;
    ///         length4         length;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct LOCKU4args {
        /// The type of the lock being released.
        pub locktype: nfs_lock_type4,
        /// 0 in NFSv4.1.
        pub seqid: seqid4,
        /// The lock stateid.
        pub lock_stateid: stateid4,
        /// First byte.
        pub offset: offset4,
        /// Bytes.
        pub length: length4,
    }
);

/// RFC 8881 §18.12.2
/// ```text
/// union LOCKU4res switch (nfsstat4 status) {
///  case   NFS4_OK:
///          stateid4       lock_stateid;
///  default:
///          void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type LOCKU4res = super::result::Nfs4Res<stateid4>;
