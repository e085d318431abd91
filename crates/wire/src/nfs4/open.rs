//! Open and delegation state (RFC 8881 §9, §10): OPEN, CLOSE,
//! DELEGRETURN, FREE_STATEID and TEST_STATEID.

use super::attr::fattr4;
use super::result::Nfs4Res;
use super::types::{
    bitmap4, change_info4, component4, decode_array, encode_array, nfsace4, nfsstat4, open_owner4,
    seqid4, stateid4, verifier4,
};
use crate::nfs3::types::xdr_struct;
use crate::wire_enum;
use crate::xdr::{Decode, DecodeError, Encode, XdrReader, XdrWrite};

/// RFC 8881 §18.16.3 `OPEN4_SHARE_ACCESS_READ`.
pub const OPEN4_SHARE_ACCESS_READ: u32 = 0x0000_0001;
/// RFC 8881 §18.16.3 `OPEN4_SHARE_ACCESS_WRITE`.
pub const OPEN4_SHARE_ACCESS_WRITE: u32 = 0x0000_0002;
/// RFC 8881 §18.16.3 `OPEN4_SHARE_ACCESS_BOTH`.
pub const OPEN4_SHARE_ACCESS_BOTH: u32 = 0x0000_0003;
/// RFC 8881 §18.16.3 `OPEN4_SHARE_DENY_NONE`.
pub const OPEN4_SHARE_DENY_NONE: u32 = 0x0000_0000;
/// RFC 8881 §18.16.3 `OPEN4_SHARE_DENY_READ`.
pub const OPEN4_SHARE_DENY_READ: u32 = 0x0000_0001;
/// RFC 8881 §18.16.3 `OPEN4_SHARE_DENY_WRITE`.
pub const OPEN4_SHARE_DENY_WRITE: u32 = 0x0000_0002;
/// RFC 8881 §18.16.3 `OPEN4_SHARE_DENY_BOTH`.
pub const OPEN4_SHARE_DENY_BOTH: u32 = 0x0000_0003;
/// RFC 8881 §18.16.3 `OPEN4_SHARE_ACCESS_WANT_DELEG_MASK`.
pub const OPEN4_SHARE_ACCESS_WANT_DELEG_MASK: u32 = 0xFF00;
/// RFC 8881 §18.16.3 `OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE`.
pub const OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE: u32 = 0x0000;
/// RFC 8881 §18.16.3 `OPEN4_SHARE_ACCESS_WANT_READ_DELEG`.
pub const OPEN4_SHARE_ACCESS_WANT_READ_DELEG: u32 = 0x0100;
/// RFC 8881 §18.16.3 `OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG`.
pub const OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG: u32 = 0x0200;
/// RFC 8881 §18.16.3 `OPEN4_SHARE_ACCESS_WANT_ANY_DELEG`.
pub const OPEN4_SHARE_ACCESS_WANT_ANY_DELEG: u32 = 0x0300;
/// RFC 8881 §18.16.3 `OPEN4_SHARE_ACCESS_WANT_NO_DELEG`: a client that
/// answers no recalls asks for none.
pub const OPEN4_SHARE_ACCESS_WANT_NO_DELEG: u32 = 0x0400;
/// RFC 8881 §18.16.3 `OPEN4_SHARE_ACCESS_WANT_CANCEL`.
pub const OPEN4_SHARE_ACCESS_WANT_CANCEL: u32 = 0x0500;

/// RFC 8881 §18.16.3 `OPEN4_RESULT_CONFIRM` (never in NFSv4.1).
pub const OPEN4_RESULT_CONFIRM: u32 = 0x0000_0002;
/// RFC 8881 §18.16.3 `OPEN4_RESULT_LOCKTYPE_POSIX`.
pub const OPEN4_RESULT_LOCKTYPE_POSIX: u32 = 0x0000_0004;
/// RFC 8881 §18.16.3 `OPEN4_RESULT_PRESERVE_UNLINKED`.
pub const OPEN4_RESULT_PRESERVE_UNLINKED: u32 = 0x0000_0008;
/// RFC 8881 §18.16.3 `OPEN4_RESULT_MAY_NOTIFY_LOCK`.
pub const OPEN4_RESULT_MAY_NOTIFY_LOCK: u32 = 0x0000_0020;

wire_enum!(
    /// RFC 8881 §18.16.1
    /// ```text
    /// enum createmode4 {
    ///         UNCHECKED4      = 0,
    ///         GUARDED4        = 1,
    ///         /* Deprecated in NFSv4.1. */
    ///         EXCLUSIVE4      = 2,
    ///         EXCLUSIVE4_1    = 3
    /// };
    /// ```
    createmode4 {
        UNCHECKED4 = 0,
        GUARDED4 = 1,
        EXCLUSIVE4 = 2,
        EXCLUSIVE4_1 = 3,
    }
);

xdr_struct!(
    /// RFC 8881 §18.16.1
    /// ```text
    /// struct creatverfattr {
    ///          verifier4      cva_verf;
    ///          fattr4         cva_attrs;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct creatverfattr {
        /// The exclusive-create verifier.
        pub cva_verf: verifier4,
        /// Attributes to set (only those in `suppattr_exclcreat`).
        pub cva_attrs: fattr4,
    }
);

/// RFC 8881 §18.16.1
/// ```text
/// union createhow4 switch (createmode4 mode) {
///  case UNCHECKED4:
///  case GUARDED4:
///          fattr4         createattrs;
///  case EXCLUSIVE4:
///          verifier4      createverf;
///  case EXCLUSIVE4_1:
///          creatverfattr  ch_createboth;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum createhow4 {
    /// Create, or open the existing file.
    UNCHECKED4(fattr4),
    /// Create; `NFS4ERR_EXIST` if it exists.
    GUARDED4(fattr4),
    /// Exclusive create by verifier (deprecated in NFSv4.1).
    EXCLUSIVE4(verifier4),
    /// Exclusive create by verifier, with attributes.
    EXCLUSIVE4_1(creatverfattr),
}

impl Encode for createhow4 {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            createhow4::UNCHECKED4(a) => {
                createmode4::UNCHECKED4.encode(out);
                a.encode(out);
            }
            createhow4::GUARDED4(a) => {
                createmode4::GUARDED4.encode(out);
                a.encode(out);
            }
            createhow4::EXCLUSIVE4(v) => {
                createmode4::EXCLUSIVE4.encode(out);
                v.encode(out);
            }
            createhow4::EXCLUSIVE4_1(c) => {
                createmode4::EXCLUSIVE4_1.encode(out);
                c.encode(out);
            }
        }
    }
}
impl Decode for createhow4 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        match createmode4::decode(r)? {
            createmode4::UNCHECKED4 => Ok(createhow4::UNCHECKED4(fattr4::decode(r)?)),
            createmode4::GUARDED4 => Ok(createhow4::GUARDED4(fattr4::decode(r)?)),
            createmode4::EXCLUSIVE4 => Ok(createhow4::EXCLUSIVE4(verifier4::decode(r)?)),
            createmode4::EXCLUSIVE4_1 => Ok(createhow4::EXCLUSIVE4_1(creatverfattr::decode(r)?)),
            other => Err(DecodeError::BadDiscriminant {
                what: "createhow4",
                value: other.0,
            }),
        }
    }
}

wire_enum!(
    /// RFC 8881 §18.16.1
    /// ```text
    /// enum opentype4 {
    ///         OPEN4_NOCREATE  = 0,
    ///         OPEN4_CREATE    = 1
    /// };
    /// ```
    opentype4 {
        OPEN4_NOCREATE = 0,
        OPEN4_CREATE = 1,
    }
);

/// RFC 8881 §18.16.1
/// ```text
/// union openflag4 switch (opentype4 opentype) {
///  case OPEN4_CREATE:
///          createhow4     how;
///  default:
///          void;
/// };
/// ```
/// An `opentype` other than the two the RFC defines is refused on decode
/// (`BadDiscriminant`): it can only be a broken peer.
// The create arm holds an inline fattr4; an OPEN is built once per open
// file, where a box would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub enum openflag4 {
    /// Open an existing file.
    #[default]
    OPEN4_NOCREATE,
    /// Create it as `createhow4` says.
    OPEN4_CREATE(createhow4),
}

impl Encode for openflag4 {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            openflag4::OPEN4_NOCREATE => opentype4::OPEN4_NOCREATE.encode(out),
            openflag4::OPEN4_CREATE(how) => {
                opentype4::OPEN4_CREATE.encode(out);
                how.encode(out);
            }
        }
    }
}
impl Decode for openflag4 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        match opentype4::decode(r)? {
            opentype4::OPEN4_NOCREATE => Ok(openflag4::OPEN4_NOCREATE),
            opentype4::OPEN4_CREATE => Ok(openflag4::OPEN4_CREATE(createhow4::decode(r)?)),
            other => Err(DecodeError::BadDiscriminant {
                what: "opentype4",
                value: other.0,
            }),
        }
    }
}

wire_enum!(
    /// RFC 8881 §18.16.1
    /// ```text
    /// enum open_delegation_type4 {
    ///         OPEN_DELEGATE_NONE      = 0,
    ///         OPEN_DELEGATE_READ      = 1,
    ///         OPEN_DELEGATE_WRITE     = 2,
    ///         OPEN_DELEGATE_NONE_EXT  = 3 /* new to v4.1 */
    /// };
    /// ```
    open_delegation_type4 {
        OPEN_DELEGATE_NONE = 0,
        OPEN_DELEGATE_READ = 1,
        OPEN_DELEGATE_WRITE = 2,
        OPEN_DELEGATE_NONE_EXT = 3,
    }
);

wire_enum!(
    /// RFC 8881 §18.16.1
    /// ```text
    /// enum open_claim_type4 {
    ///         CLAIM_NULL              = 0,
    ///         CLAIM_PREVIOUS          = 1,
    ///         CLAIM_DELEGATE_CUR      = 2,
    ///         CLAIM_DELEGATE_PREV     = 3,
    ///         CLAIM_FH                = 4, /* new to v4.1 */
    ///         CLAIM_DELEG_CUR_FH      = 5, /* new to v4.1 */
    ///         CLAIM_DELEG_PREV_FH     = 6 /* new to v4.1 */
    /// };
    /// ```
    open_claim_type4 {
        CLAIM_NULL = 0,
        CLAIM_PREVIOUS = 1,
        CLAIM_DELEGATE_CUR = 2,
        CLAIM_DELEGATE_PREV = 3,
        CLAIM_FH = 4,
        CLAIM_DELEG_CUR_FH = 5,
        CLAIM_DELEG_PREV_FH = 6,
    }
);

xdr_struct!(
    /// RFC 8881 §18.16.1
    /// ```text
    /// struct open_claim_delegate_cur4 {
    ///         stateid4        delegate_stateid;
    ///         component4      file;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct open_claim_delegate_cur4 {
        /// The delegation.
        pub delegate_stateid: stateid4,
        /// The file, in the current directory.
        pub file: component4,
    }
);

/// RFC 8881 §18.16.1
/// ```text
/// union open_claim4 switch (open_claim_type4 claim) {
///  case CLAIM_NULL:          /* CURRENT_FH: directory */
///         component4      file;
///  case CLAIM_PREVIOUS:      /* CURRENT_FH: file being reclaimed */
///         open_delegation_type4   delegate_type;
///  case CLAIM_DELEGATE_CUR:  /* CURRENT_FH: directory */
///         open_claim_delegate_cur4        delegate_cur_info;
///  case CLAIM_DELEGATE_PREV: /* CURRENT_FH: directory */
///         component4      file_delegate_prev;
///  case CLAIM_FH:            /* CURRENT_FH: regular file to open */
///         void;
///  case CLAIM_DELEG_PREV_FH: /* CURRENT_FH: file being opened */
///         void;
///  case CLAIM_DELEG_CUR_FH:  /* CURRENT_FH: file being opened */
///          stateid4       oc_delegate_stateid;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum open_claim4 {
    /// Open `file` in the current directory (the ordinary open).
    CLAIM_NULL(component4),
    /// Reclaim, during the grace period after a server restart, the open
    /// of the current handle (and the delegation of this type it had).
    CLAIM_PREVIOUS(open_delegation_type4),
    /// Open under a delegation, by name.
    CLAIM_DELEGATE_CUR(open_claim_delegate_cur4),
    /// Reclaim a delegated open of a previous client incarnation, by name.
    CLAIM_DELEGATE_PREV(component4),
    /// Open the current handle (a file the client already has a handle
    /// for: no LOOKUP).
    CLAIM_FH,
    /// Open the current handle under this delegation.
    CLAIM_DELEG_CUR_FH(stateid4),
    /// Reclaim a delegated open of the current handle.
    CLAIM_DELEG_PREV_FH,
}

impl Encode for open_claim4 {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            open_claim4::CLAIM_NULL(file) => {
                open_claim_type4::CLAIM_NULL.encode(out);
                file.encode(out);
            }
            open_claim4::CLAIM_PREVIOUS(t) => {
                open_claim_type4::CLAIM_PREVIOUS.encode(out);
                t.encode(out);
            }
            open_claim4::CLAIM_DELEGATE_CUR(c) => {
                open_claim_type4::CLAIM_DELEGATE_CUR.encode(out);
                c.encode(out);
            }
            open_claim4::CLAIM_DELEGATE_PREV(file) => {
                open_claim_type4::CLAIM_DELEGATE_PREV.encode(out);
                file.encode(out);
            }
            open_claim4::CLAIM_FH => open_claim_type4::CLAIM_FH.encode(out),
            open_claim4::CLAIM_DELEG_CUR_FH(s) => {
                open_claim_type4::CLAIM_DELEG_CUR_FH.encode(out);
                s.encode(out);
            }
            open_claim4::CLAIM_DELEG_PREV_FH => open_claim_type4::CLAIM_DELEG_PREV_FH.encode(out),
        }
    }
}
impl Decode for open_claim4 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(match open_claim_type4::decode(r)? {
            open_claim_type4::CLAIM_NULL => open_claim4::CLAIM_NULL(component4::decode(r)?),
            open_claim_type4::CLAIM_PREVIOUS => {
                open_claim4::CLAIM_PREVIOUS(open_delegation_type4::decode(r)?)
            }
            open_claim_type4::CLAIM_DELEGATE_CUR => {
                open_claim4::CLAIM_DELEGATE_CUR(open_claim_delegate_cur4::decode(r)?)
            }
            open_claim_type4::CLAIM_DELEGATE_PREV => {
                open_claim4::CLAIM_DELEGATE_PREV(component4::decode(r)?)
            }
            open_claim_type4::CLAIM_FH => open_claim4::CLAIM_FH,
            open_claim_type4::CLAIM_DELEG_CUR_FH => {
                open_claim4::CLAIM_DELEG_CUR_FH(stateid4::decode(r)?)
            }
            open_claim_type4::CLAIM_DELEG_PREV_FH => open_claim4::CLAIM_DELEG_PREV_FH,
            other => {
                return Err(DecodeError::BadDiscriminant {
                    what: "open_claim4",
                    value: other.0,
                })
            }
        })
    }
}

xdr_struct!(
    /// RFC 8881 §18.16.1 (in NFSv4.1 `seqid` is ignored and sent as 0)
    /// ```text
    /// struct OPEN4args {
    ///         seqid4          seqid;
    ///         uint32_t        share_access;
    ///         uint32_t        share_deny;
    ///         open_owner4     owner;
    ///         openflag4       openhow;
    ///         open_claim4     claim;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct OPEN4args {
        /// 0 in NFSv4.1.
        pub seqid: seqid4,
        /// `OPEN4_SHARE_ACCESS_*`, with `OPEN4_SHARE_ACCESS_WANT_*` bits.
        pub share_access: u32,
        /// `OPEN4_SHARE_DENY_*`.
        pub share_deny: u32,
        /// The open owner.
        pub owner: open_owner4,
        /// Open or create.
        pub openhow: openflag4,
        /// What to open, and by what right.
        pub claim: open_claim4,
    }
);

xdr_struct!(
    /// RFC 8881 §18.16.2
    /// ```text
    /// struct open_read_delegation4 {
    ///  stateid4 stateid;    /* Stateid for delegation*/
    ///  bool     recall;     /* Pre-recalled flag for
    ///                          delegations obtained
    ///                          by reclaim (CLAIM_PREVIOUS) */
    ///  nfsace4 permissions; /* Defines users who don't
    ///                          need an ACCESS call to
    ///                          open for read */
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct open_read_delegation4 {
        /// The delegation.
        pub stateid: stateid4,
        /// Already recalled: return it at once.
        pub recall: bool,
        /// Who may open without asking.
        pub permissions: nfsace4,
    }
);

wire_enum!(
    /// RFC 8881 §18.16.2
    /// ```text
    /// enum limit_by4 {
    ///         NFS_LIMIT_SIZE          = 1,
    ///         NFS_LIMIT_BLOCKS        = 2
    /// };
    /// ```
    limit_by4 {
        NFS_LIMIT_SIZE = 1,
        NFS_LIMIT_BLOCKS = 2,
    }
);

xdr_struct!(
    /// RFC 8881 §18.16.2
    /// ```text
    /// struct nfs_modified_limit4 {
    ///         uint32_t        num_blocks;
    ///         uint32_t        bytes_per_block;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct nfs_modified_limit4 {
        /// Blocks.
        pub num_blocks: u32,
        /// Block size.
        pub bytes_per_block: u32,
    }
);

/// RFC 8881 §18.16.2
/// ```text
/// union nfs_space_limit4 switch (limit_by4 limitby) {
///  case NFS_LIMIT_SIZE:
///          uint64_t               filesize;
///  case NFS_LIMIT_BLOCKS:
///          nfs_modified_limit4    mod_blocks;
/// } ;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum nfs_space_limit4 {
    /// A size in bytes.
    NFS_LIMIT_SIZE(u64),
    /// A number of blocks.
    NFS_LIMIT_BLOCKS(nfs_modified_limit4),
}

impl Encode for nfs_space_limit4 {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            nfs_space_limit4::NFS_LIMIT_SIZE(s) => {
                limit_by4::NFS_LIMIT_SIZE.encode(out);
                out.put_u64(*s);
            }
            nfs_space_limit4::NFS_LIMIT_BLOCKS(b) => {
                limit_by4::NFS_LIMIT_BLOCKS.encode(out);
                b.encode(out);
            }
        }
    }
}
impl Decode for nfs_space_limit4 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        match limit_by4::decode(r)? {
            limit_by4::NFS_LIMIT_SIZE => Ok(nfs_space_limit4::NFS_LIMIT_SIZE(r.u64("filesize")?)),
            limit_by4::NFS_LIMIT_BLOCKS => Ok(nfs_space_limit4::NFS_LIMIT_BLOCKS(
                nfs_modified_limit4::decode(r)?,
            )),
            other => Err(DecodeError::BadDiscriminant {
                what: "nfs_space_limit4",
                value: other.0,
            }),
        }
    }
}

xdr_struct!(
    /// RFC 8881 §18.16.2
    /// ```text
    /// struct open_write_delegation4 {
    ///  stateid4 stateid;      /* Stateid for delegation */
    ///  bool     recall;       /* Pre-recalled flag for
    ///                            delegations obtained
    ///                            by reclaim
    ///                            (CLAIM_PREVIOUS) */
    ///  nfs_space_limit4
    ///            space_limit; /* Defines condition that
    ///                            the client must check to
    ///                            determine whether the
    ///                            file needs to be flushed
    ///                            to the server on close.  */
    ///  nfsace4   permissions; /* Defines users who don't
    ///                            need an ACCESS call as
    ///                            part of a delegated
    ///                            open. */
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct open_write_delegation4 {
        /// The delegation.
        pub stateid: stateid4,
        /// Already recalled: return it at once.
        pub recall: bool,
        /// When the client must flush on close.
        pub space_limit: nfs_space_limit4,
        /// Who may open without asking.
        pub permissions: nfsace4,
    }
);

wire_enum!(
    /// RFC 8881 §18.16.2
    /// ```text
    /// enum why_no_delegation4 { /* new to v4.1 */
    ///         WND4_NOT_WANTED         = 0,
    ///         WND4_CONTENTION         = 1,
    ///         WND4_RESOURCE           = 2,
    ///         WND4_NOT_SUPP_FTYPE     = 3,
    ///         WND4_WRITE_DELEG_NOT_SUPP_FTYPE = 4,
    ///         WND4_NOT_SUPP_UPGRADE   = 5,
    ///         WND4_NOT_SUPP_DOWNGRADE = 6,
    ///         WND4_CANCELLED          = 7,
    ///         WND4_IS_DIR             = 8
    /// };
    /// ```
    why_no_delegation4 {
        WND4_NOT_WANTED = 0,
        WND4_CONTENTION = 1,
        WND4_RESOURCE = 2,
        WND4_NOT_SUPP_FTYPE = 3,
        WND4_WRITE_DELEG_NOT_SUPP_FTYPE = 4,
        WND4_NOT_SUPP_UPGRADE = 5,
        WND4_NOT_SUPP_DOWNGRADE = 6,
        WND4_CANCELLED = 7,
        WND4_IS_DIR = 8,
    }
);

/// RFC 8881 §18.16.2
/// ```text
/// union open_none_delegation4 /* new to v4.1 */
/// switch (why_no_delegation4 ond_why) {
///         case WND4_CONTENTION:
///                 bool ond_server_will_push_deleg;
///         case WND4_RESOURCE:
///                 bool ond_server_will_signal_avail;
///         default:
///                 void;
/// };
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum open_none_delegation4 {
    /// Contention; true if the server will push one later.
    WND4_CONTENTION(bool),
    /// No resources; true if the server will signal when it has.
    WND4_RESOURCE(bool),
    /// Any other reason (the RFC's `default: void` arm).
    Why(why_no_delegation4),
}

impl Encode for open_none_delegation4 {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            open_none_delegation4::WND4_CONTENTION(b) => {
                why_no_delegation4::WND4_CONTENTION.encode(out);
                out.put_bool(*b);
            }
            open_none_delegation4::WND4_RESOURCE(b) => {
                why_no_delegation4::WND4_RESOURCE.encode(out);
                out.put_bool(*b);
            }
            open_none_delegation4::Why(w) => {
                debug_assert!(!matches!(
                    *w,
                    why_no_delegation4::WND4_CONTENTION | why_no_delegation4::WND4_RESOURCE
                ));
                w.encode(out);
            }
        }
    }
}
impl Decode for open_none_delegation4 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(match why_no_delegation4::decode(r)? {
            why_no_delegation4::WND4_CONTENTION => {
                open_none_delegation4::WND4_CONTENTION(r.bool("ond_server_will_push_deleg")?)
            }
            why_no_delegation4::WND4_RESOURCE => {
                open_none_delegation4::WND4_RESOURCE(r.bool("ond_server_will_signal_avail")?)
            }
            other => open_none_delegation4::Why(other),
        })
    }
}

/// RFC 8881 §18.16.2
/// ```text
/// union open_delegation4
/// switch (open_delegation_type4 delegation_type) {
///         case OPEN_DELEGATE_NONE:
///                 void;
///         case OPEN_DELEGATE_READ:
///                 open_read_delegation4 read;
///         case OPEN_DELEGATE_WRITE:
///                 open_write_delegation4 write;
///         case OPEN_DELEGATE_NONE_EXT: /* new to v4.1 */
///                 open_none_delegation4 od_whynone;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub enum open_delegation4 {
    /// No delegation.
    #[default]
    OPEN_DELEGATE_NONE,
    /// A read delegation: the client must return it when recalled.
    OPEN_DELEGATE_READ(open_read_delegation4),
    /// A write delegation.
    OPEN_DELEGATE_WRITE(open_write_delegation4),
    /// No delegation, and why.
    OPEN_DELEGATE_NONE_EXT(open_none_delegation4),
}

impl Encode for open_delegation4 {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            open_delegation4::OPEN_DELEGATE_NONE => {
                open_delegation_type4::OPEN_DELEGATE_NONE.encode(out)
            }
            open_delegation4::OPEN_DELEGATE_READ(d) => {
                open_delegation_type4::OPEN_DELEGATE_READ.encode(out);
                d.encode(out);
            }
            open_delegation4::OPEN_DELEGATE_WRITE(d) => {
                open_delegation_type4::OPEN_DELEGATE_WRITE.encode(out);
                d.encode(out);
            }
            open_delegation4::OPEN_DELEGATE_NONE_EXT(w) => {
                open_delegation_type4::OPEN_DELEGATE_NONE_EXT.encode(out);
                w.encode(out);
            }
        }
    }
}
impl Decode for open_delegation4 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(match open_delegation_type4::decode(r)? {
            open_delegation_type4::OPEN_DELEGATE_NONE => open_delegation4::OPEN_DELEGATE_NONE,
            open_delegation_type4::OPEN_DELEGATE_READ => {
                open_delegation4::OPEN_DELEGATE_READ(open_read_delegation4::decode(r)?)
            }
            open_delegation_type4::OPEN_DELEGATE_WRITE => {
                open_delegation4::OPEN_DELEGATE_WRITE(open_write_delegation4::decode(r)?)
            }
            open_delegation_type4::OPEN_DELEGATE_NONE_EXT => {
                open_delegation4::OPEN_DELEGATE_NONE_EXT(open_none_delegation4::decode(r)?)
            }
            other => {
                return Err(DecodeError::BadDiscriminant {
                    what: "open_delegation4",
                    value: other.0,
                })
            }
        })
    }
}

xdr_struct!(
    /// RFC 8881 §18.16.2
    /// ```text
    /// struct OPEN4resok {
    ///  stateid4       stateid;      /* Stateid for open */
    ///  change_info4   cinfo;        /* Directory Change Info */
    ///  uint32_t       rflags;       /* Result flags */
    ///  bitmap4        attrset;      /* attribute set for create*/
    ///  open_delegation4 delegation; /* Info on any open
    ///                                  delegation */
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct OPEN4resok {
        /// The open stateid, for READ, WRITE, LOCK and CLOSE.
        pub stateid: stateid4,
        /// The directory's change attribute around a create.
        pub cinfo: change_info4,
        /// `OPEN4_RESULT_*` bits.
        pub rflags: u32,
        /// Attributes set by a create.
        pub attrset: bitmap4,
        /// A delegation, if the server granted one.
        pub delegation: open_delegation4,
    }
);

/// RFC 8881 §18.16.2
/// ```text
/// union OPEN4res switch (nfsstat4 status) {
///  case NFS4_OK:
///         /* New CURRENT_FH: opened file */
///         OPEN4resok      resok4;
///  default:
///         void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type OPEN4res = Nfs4Res<OPEN4resok>;

xdr_struct!(
    /// RFC 8881 §18.2.1 (in NFSv4.1 `seqid` is ignored and sent as 0)
    /// ```text
    /// struct CLOSE4args {
    ///         /* CURRENT_FH: object */
    ///         seqid4          seqid;
    ///         stateid4        open_stateid;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct CLOSE4args {
        /// 0 in NFSv4.1.
        pub seqid: seqid4,
        /// The open to close.
        pub open_stateid: stateid4,
    }
);

/// RFC 8881 §18.2.2
/// ```text
/// union CLOSE4res switch (nfsstat4 status) {
///  case NFS4_OK:
///          stateid4       open_stateid;
///  default:
///          void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type CLOSE4res = Nfs4Res<stateid4>;

xdr_struct!(
    /// RFC 8881 §18.6.1
    /// ```text
    /// struct DELEGRETURN4args {
    ///         /* CURRENT_FH: delegated object */
    ///         stateid4        deleg_stateid;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct DELEGRETURN4args {
        /// The delegation to return.
        pub deleg_stateid: stateid4,
    }
);

/// RFC 8881 §18.6.2 `struct DELEGRETURN4res { nfsstat4 status; };`
#[allow(non_camel_case_types)]
pub type DELEGRETURN4res = nfsstat4;

xdr_struct!(
    /// RFC 8881 §18.38.1
    /// ```text
    /// struct FREE_STATEID4args {
    ///         stateid4        fsa_stateid;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct FREE_STATEID4args {
        /// The (revoked or unlocked lock) stateid to free.
        pub fsa_stateid: stateid4,
    }
);

/// RFC 8881 §18.38.2 `struct FREE_STATEID4res { nfsstat4 fsr_status; };`
#[allow(non_camel_case_types)]
pub type FREE_STATEID4res = nfsstat4;

/// Bound on the stateids of TEST_STATEID (and on its status codes).
pub const MAX_TEST_STATEIDS: usize = 1024;

/// RFC 8881 §18.48.1
/// ```text
/// struct TEST_STATEID4args {
///         stateid4        ts_stateids<>;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct TEST_STATEID4args {
    /// The stateids to test (at most [`MAX_TEST_STATEIDS`]).
    pub ts_stateids: Vec<stateid4>,
}

impl Encode for TEST_STATEID4args {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_array(&self.ts_stateids, out);
    }
}
impl Decode for TEST_STATEID4args {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            ts_stateids: decode_array(r, MAX_TEST_STATEIDS, stateid4::SIZE, "ts_stateids")?,
        })
    }
}

/// RFC 8881 §18.48.2
/// ```text
/// struct TEST_STATEID4resok {
///         nfsstat4        tsr_status_codes<>;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct TEST_STATEID4resok {
    /// One status per stateid tested, in order (at most
    /// [`MAX_TEST_STATEIDS`]).
    pub tsr_status_codes: Vec<nfsstat4>,
}

impl Encode for TEST_STATEID4resok {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_array(&self.tsr_status_codes, out);
    }
}
impl Decode for TEST_STATEID4resok {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            tsr_status_codes: decode_array(r, MAX_TEST_STATEIDS, 4, "tsr_status_codes")?,
        })
    }
}

/// RFC 8881 §18.48.2
/// ```text
/// union TEST_STATEID4res switch (nfsstat4 tsr_status) {
///     case NFS4_OK:
///         TEST_STATEID4resok tsr_resok4;
///     default:
///         void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type TEST_STATEID4res = Nfs4Res<TEST_STATEID4resok>;
