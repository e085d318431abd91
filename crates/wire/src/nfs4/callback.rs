//! The back channel (RFC 8881 §20): CB_COMPOUND calls the server sends the
//! client over the session's connection, and the replies the client must
//! give. A client that holds no delegations still has to answer
//! CB_SEQUENCE and, when the server recalls something, CB_RECALL; every
//! other operation gets a proper error ([`CB_COMPOUND4args::reply`] applies
//! the RFC's rules).
//!
//! The calls arrive on the same TCP connections as the replies to the
//! client's own requests: an RPC record whose `msg_type` is CALL
//! ([`peek_msg_type`](crate::rpc::msg::peek_msg_type)) is a callback, with
//! program `csa_cb_program` (CREATE_SESSION) and procedure `CB_NULL` (0)
//! or `CB_COMPOUND` (1).

use super::attr::fattr4;
use super::result::Nfs4Res;
use super::types::{
    bitmap4, decode_array, encode_array, lock_owner4, nfs_fh4, nfsstat4, sequenceid4, sessionid4,
    slotid4, stateid4, utf8str_cs, MAX_SMALL_ARRAY,
};
use crate::nfs3::types::xdr_struct;
use crate::rpc::msg::{AcceptedReply, ReplyBody};
use crate::rpc::{OpaqueAuth, ReplyHeader};
use crate::wire_enum;
use crate::xdr::{Decode, DecodeError, Encode, XdrReader, XdrWrite};

/// RFC 8881 §20 (RFC 5662 `program NFS4_CALLBACK`): the callback program
/// number of the XDR. The number a server really calls is the client's
/// `csa_cb_program`.
pub const NFS4_CALLBACK: u32 = 0x4000_0000;
/// RFC 5662 `version NFS_CB`: the callback program's version.
pub const NFS_CB: u32 = 1;
/// RFC 8881 §20.1 `CB_NULL`.
pub const CB_NULL: u32 = 0;
/// RFC 8881 §20.2 `CB_COMPOUND`.
pub const CB_COMPOUND: u32 = 1;

/// Bound on the operations of one CB_COMPOUND this crate decodes.
pub const MAX_CB_OPS: usize = 64;
/// Bound on a `notifylist4` (the encoded notifications of one `notify4`).
pub const MAX_NOTIFYLIST_LEN: usize = 64 << 10;

wire_enum!(
    /// RFC 8881 §20.2, RFC 5662
    /// ```text
    /// enum nfs_cb_opnum4 {
    ///         OP_CB_GETATTR           = 3,
    ///         OP_CB_RECALL            = 4,
    ///         OP_CB_LAYOUTRECALL      = 5,
    ///         OP_CB_NOTIFY            = 6,
    ///         OP_CB_PUSH_DELEG        = 7,
    ///         OP_CB_RECALL_ANY        = 8,
    ///         OP_CB_RECALLABLE_OBJ_AVAIL = 9,
    ///         OP_CB_RECALL_SLOT       = 10,
    ///         OP_CB_SEQUENCE          = 11,
    ///         OP_CB_WANTS_CANCELLED   = 12,
    ///         OP_CB_NOTIFY_LOCK       = 13,
    ///         OP_CB_NOTIFY_DEVICEID   = 14,
    ///         OP_CB_ILLEGAL           = 10044
    /// };
    /// ```
    nfs_cb_opnum4 {
        OP_CB_GETATTR = 3,
        OP_CB_RECALL = 4,
        OP_CB_LAYOUTRECALL = 5,
        OP_CB_NOTIFY = 6,
        OP_CB_PUSH_DELEG = 7,
        OP_CB_RECALL_ANY = 8,
        OP_CB_RECALLABLE_OBJ_AVAIL = 9,
        OP_CB_RECALL_SLOT = 10,
        OP_CB_SEQUENCE = 11,
        OP_CB_WANTS_CANCELLED = 12,
        OP_CB_NOTIFY_LOCK = 13,
        OP_CB_NOTIFY_DEVICEID = 14,
        OP_CB_ILLEGAL = 10044,
    }
);

impl nfs_cb_opnum4 {
    /// True for the operation numbers RFC 8881 defines.
    pub fn is_known(self) -> bool {
        self.name().is_some()
    }
}

xdr_struct!(
    /// RFC 8881 §20.1.1
    /// ```text
    /// struct CB_GETATTR4args {
    ///         nfs_fh4 fh;
    ///         bitmap4 attr_request;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct CB_GETATTR4args {
        /// The file under a write delegation.
        pub fh: nfs_fh4,
        /// The attributes wanted.
        pub attr_request: bitmap4,
    }
);

/// RFC 8881 §20.1.2
/// ```text
/// struct CB_GETATTR4resok {
///         fattr4  obj_attributes;
/// };
/// union CB_GETATTR4res switch (nfsstat4 status) {
///  case NFS4_OK:
///          CB_GETATTR4resok       resok4;
///  default:
///          void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type CB_GETATTR4res = Nfs4Res<fattr4>;

xdr_struct!(
    /// RFC 8881 §20.2.1
    /// ```text
    /// struct CB_RECALL4args {
    ///         stateid4        stateid;
    ///         bool            truncate;
    ///         nfs_fh4         fh;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct CB_RECALL4args {
        /// The delegation to return (with DELEGRETURN).
        pub stateid: stateid4,
        /// The file is being truncated to zero.
        pub truncate: bool,
        /// The delegated file.
        pub fh: nfs_fh4,
    }
);

/// RFC 8881 §20.4.1
/// ```text
/// typedef opaque notifylist4<>;
/// struct notify4 {
///         /* composed from notify_type4 or notify_deviceid_type4 */
///         bitmap4         notify_mask;
///         notifylist4     notify_vals;
/// };
/// ```
/// The notifications stay encoded: a client without directory
/// delegations has nothing to do with them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct notify4 {
    /// Which notifications `notify_vals` holds.
    pub notify_mask: bitmap4,
    /// Their encoding (at most [`MAX_NOTIFYLIST_LEN`] bytes).
    pub notify_vals: Vec<u8>,
}

impl Encode for notify4 {
    fn encode(&self, out: &mut Vec<u8>) {
        self.notify_mask.encode(out);
        out.put_opaque(&self.notify_vals);
    }
}
impl Decode for notify4 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            notify_mask: bitmap4::decode(r)?,
            notify_vals: r.opaque(MAX_NOTIFYLIST_LEN, "notifylist4")?.to_vec(),
        })
    }
}

/// RFC 8881 §20.4.1
/// ```text
/// struct CB_NOTIFY4args {
///         stateid4    cna_stateid;
///         nfs_fh4     cna_fh;
///         notify4     cna_changes<>;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct CB_NOTIFY4args {
    /// The directory delegation.
    pub cna_stateid: stateid4,
    /// The directory.
    pub cna_fh: nfs_fh4,
    /// The changes (at most [`MAX_SMALL_ARRAY`]).
    pub cna_changes: Vec<notify4>,
}

impl Encode for CB_NOTIFY4args {
    fn encode(&self, out: &mut Vec<u8>) {
        self.cna_stateid.encode(out);
        self.cna_fh.encode(out);
        encode_array(&self.cna_changes, out);
    }
}
impl Decode for CB_NOTIFY4args {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            cna_stateid: stateid4::decode(r)?,
            cna_fh: nfs_fh4::decode(r)?,
            cna_changes: decode_array(r, MAX_SMALL_ARRAY, 8, "cna_changes")?,
        })
    }
}

xdr_struct!(
    /// RFC 8881 §20.6.1 (also `CB_RECALLABLE_OBJ_AVAIL4args`, §20.7.1)
    /// ```text
    /// struct  CB_RECALL_ANY4args      {
    ///         uint32_t        craa_objects_to_keep;
    ///         bitmap4         craa_type_mask;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct CB_RECALL_ANY4args {
        /// How many recallable objects the client may keep.
        pub craa_objects_to_keep: u32,
        /// `RCA4_TYPE_MASK_*` bits: which kinds.
        pub craa_type_mask: bitmap4,
    }
);

xdr_struct!(
    /// RFC 8881 §20.8.1
    /// ```text
    /// struct CB_RECALL_SLOT4args {
    ///         slotid4       rsa_target_highest_slotid;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct CB_RECALL_SLOT4args {
        /// The highest fore-channel slot the server wants in use.
        pub rsa_target_highest_slotid: slotid4,
    }
);

xdr_struct!(
    /// RFC 8881 §20.9.1
    /// ```text
    /// struct referring_call4 {
    ///         sequenceid4     rc_sequenceid;
    ///         slotid4         rc_slotid;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct referring_call4 {
        /// The fore-channel request's sequence id.
        pub rc_sequenceid: sequenceid4,
        /// Its slot.
        pub rc_slotid: slotid4,
    }
);

/// RFC 8881 §20.9.1
/// ```text
/// struct referring_call_list4 {
///         sessionid4      rcl_sessionid;
///         referring_call4 rcl_referring_calls<>;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct referring_call_list4 {
    /// The fore-channel session.
    pub rcl_sessionid: sessionid4,
    /// The requests this callback is about (at most [`MAX_SMALL_ARRAY`]).
    pub rcl_referring_calls: Vec<referring_call4>,
}

impl Encode for referring_call_list4 {
    fn encode(&self, out: &mut Vec<u8>) {
        self.rcl_sessionid.encode(out);
        encode_array(&self.rcl_referring_calls, out);
    }
}
impl Decode for referring_call_list4 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            rcl_sessionid: sessionid4::decode(r)?,
            rcl_referring_calls: decode_array(r, MAX_SMALL_ARRAY, 8, "rcl_referring_calls")?,
        })
    }
}

/// RFC 8881 §20.9.1
/// ```text
/// struct CB_SEQUENCE4args {
///         sessionid4           csa_sessionid;
///         sequenceid4          csa_sequenceid;
///         slotid4              csa_slotid;
///         slotid4              csa_highest_slotid;
///         bool                 csa_cachethis;
///         referring_call_list4 csa_referring_call_lists<>;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct CB_SEQUENCE4args {
    /// The session.
    pub csa_sessionid: sessionid4,
    /// The back-channel slot's sequence id.
    pub csa_sequenceid: sequenceid4,
    /// The back-channel slot.
    pub csa_slotid: slotid4,
    /// The highest back-channel slot the server uses.
    pub csa_highest_slotid: slotid4,
    /// Whether the server wants the reply cached.
    pub csa_cachethis: bool,
    /// Fore-channel requests this callback races with (at most
    /// [`MAX_SMALL_ARRAY`]).
    pub csa_referring_call_lists: Vec<referring_call_list4>,
}

impl Encode for CB_SEQUENCE4args {
    fn encode(&self, out: &mut Vec<u8>) {
        self.csa_sessionid.encode(out);
        out.put_u32(self.csa_sequenceid);
        out.put_u32(self.csa_slotid);
        out.put_u32(self.csa_highest_slotid);
        out.put_bool(self.csa_cachethis);
        encode_array(&self.csa_referring_call_lists, out);
    }
}
impl Decode for CB_SEQUENCE4args {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            csa_sessionid: sessionid4::decode(r)?,
            csa_sequenceid: r.u32("csa_sequenceid")?,
            csa_slotid: r.u32("csa_slotid")?,
            csa_highest_slotid: r.u32("csa_highest_slotid")?,
            csa_cachethis: r.bool("csa_cachethis")?,
            csa_referring_call_lists: decode_array(
                r,
                MAX_SMALL_ARRAY,
                20,
                "csa_referring_call_lists",
            )?,
        })
    }
}

impl CB_SEQUENCE4args {
    /// The successful CB_SEQUENCE result to this call: the session,
    /// sequence id and slot echoed, `highest_slotid` as the highest
    /// back-channel slot the client accepts and wants used.
    pub fn reply_ok(&self, highest_slotid: slotid4) -> nfs_cb_resop4 {
        nfs_cb_resop4::OP_CB_SEQUENCE(Nfs4Res::Ok(CB_SEQUENCE4resok {
            csr_sessionid: self.csa_sessionid,
            csr_sequenceid: self.csa_sequenceid,
            csr_slotid: self.csa_slotid,
            csr_highest_slotid: highest_slotid,
            csr_target_highest_slotid: highest_slotid,
        }))
    }
}

xdr_struct!(
    /// RFC 8881 §20.9.2
    /// ```text
    /// struct CB_SEQUENCE4resok {
    ///         sessionid4         csr_sessionid;
    ///         sequenceid4        csr_sequenceid;
    ///         slotid4            csr_slotid;
    ///         slotid4            csr_highest_slotid;
    ///         slotid4            csr_target_highest_slotid;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct CB_SEQUENCE4resok {
        /// Echoes `csa_sessionid`.
        pub csr_sessionid: sessionid4,
        /// Echoes `csa_sequenceid`.
        pub csr_sequenceid: sequenceid4,
        /// Echoes `csa_slotid`.
        pub csr_slotid: slotid4,
        /// The highest back-channel slot the client accepts.
        pub csr_highest_slotid: slotid4,
        /// The highest it wants used.
        pub csr_target_highest_slotid: slotid4,
    }
);

/// RFC 8881 §20.9.2
/// ```text
/// union CB_SEQUENCE4res switch (nfsstat4 csr_status) {
/// case NFS4_OK:
///         CB_SEQUENCE4resok   csr_resok4;
/// default:
///         void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type CB_SEQUENCE4res = Nfs4Res<CB_SEQUENCE4resok>;

xdr_struct!(
    /// RFC 8881 §20.10.1
    /// ```text
    /// struct CB_WANTS_CANCELLED4args {
    ///         bool cwca_contended_wants_cancelled;
    ///         bool cwca_resourced_wants_cancelled;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct CB_WANTS_CANCELLED4args {
        /// Delegation wants cancelled for contention.
        pub cwca_contended_wants_cancelled: bool,
        /// Delegation wants cancelled for lack of resources.
        pub cwca_resourced_wants_cancelled: bool,
    }
);

xdr_struct!(
    /// RFC 8881 §20.11.1
    /// ```text
    /// struct CB_NOTIFY_LOCK4args {
    ///     nfs_fh4     cnla_fh;
    ///     lock_owner4 cnla_lock_owner;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct CB_NOTIFY_LOCK4args {
        /// The file.
        pub cnla_fh: nfs_fh4,
        /// The lock owner that may now retry its blocked lock.
        pub cnla_lock_owner: lock_owner4,
    }
);

/// RFC 8881 §20.2 `union nfs_cb_argop4 switch (unsigned argop)`: one
/// callback operation, decoded for the operations a client without
/// layouts meets. The others (CB_LAYOUTRECALL, CB_PUSH_DELEG,
/// CB_NOTIFY_DEVICEID) and unknown numbers decode as
/// [`NotDecoded`](Self::NotDecoded), which ends the decoding: the reply
/// stops at that operation anyway (with `NFS4ERR_NOTSUPP` or
/// `NFS4ERR_OP_ILLEGAL`), so its arguments are never needed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum nfs_cb_argop4 {
    /// §20.1 CB_GETATTR.
    OP_CB_GETATTR(CB_GETATTR4args),
    /// §20.2 CB_RECALL.
    OP_CB_RECALL(CB_RECALL4args),
    /// §20.4 CB_NOTIFY.
    OP_CB_NOTIFY(CB_NOTIFY4args),
    /// §20.6 CB_RECALL_ANY.
    OP_CB_RECALL_ANY(CB_RECALL_ANY4args),
    /// §20.7 CB_RECALLABLE_OBJ_AVAIL.
    OP_CB_RECALLABLE_OBJ_AVAIL(CB_RECALL_ANY4args),
    /// §20.8 CB_RECALL_SLOT.
    OP_CB_RECALL_SLOT(CB_RECALL_SLOT4args),
    /// §20.9 CB_SEQUENCE.
    OP_CB_SEQUENCE(CB_SEQUENCE4args),
    /// §20.10 CB_WANTS_CANCELLED.
    OP_CB_WANTS_CANCELLED(CB_WANTS_CANCELLED4args),
    /// §20.11 CB_NOTIFY_LOCK.
    OP_CB_NOTIFY_LOCK(CB_NOTIFY_LOCK4args),
    /// §20.13 CB_ILLEGAL.
    OP_CB_ILLEGAL,
    /// An operation whose arguments this crate does not decode; nothing
    /// after it was read.
    NotDecoded(nfs_cb_opnum4),
}

impl nfs_cb_argop4 {
    /// The operation number.
    pub fn opnum(&self) -> nfs_cb_opnum4 {
        match self {
            nfs_cb_argop4::OP_CB_GETATTR(_) => nfs_cb_opnum4::OP_CB_GETATTR,
            nfs_cb_argop4::OP_CB_RECALL(_) => nfs_cb_opnum4::OP_CB_RECALL,
            nfs_cb_argop4::OP_CB_NOTIFY(_) => nfs_cb_opnum4::OP_CB_NOTIFY,
            nfs_cb_argop4::OP_CB_RECALL_ANY(_) => nfs_cb_opnum4::OP_CB_RECALL_ANY,
            nfs_cb_argop4::OP_CB_RECALLABLE_OBJ_AVAIL(_) => {
                nfs_cb_opnum4::OP_CB_RECALLABLE_OBJ_AVAIL
            }
            nfs_cb_argop4::OP_CB_RECALL_SLOT(_) => nfs_cb_opnum4::OP_CB_RECALL_SLOT,
            nfs_cb_argop4::OP_CB_SEQUENCE(_) => nfs_cb_opnum4::OP_CB_SEQUENCE,
            nfs_cb_argop4::OP_CB_WANTS_CANCELLED(_) => nfs_cb_opnum4::OP_CB_WANTS_CANCELLED,
            nfs_cb_argop4::OP_CB_NOTIFY_LOCK(_) => nfs_cb_opnum4::OP_CB_NOTIFY_LOCK,
            nfs_cb_argop4::OP_CB_ILLEGAL => nfs_cb_opnum4::OP_CB_ILLEGAL,
            nfs_cb_argop4::NotDecoded(op) => *op,
        }
    }

    /// The reply to an operation the client does not handle: `OP_CB_ILLEGAL`
    /// with `NFS4ERR_OP_ILLEGAL` for a number RFC 8881 does not define (or
    /// CB_ILLEGAL itself), else the operation with `NFS4ERR_NOTSUPP`
    /// (RFC 8881 §20.13, §15.1.3.5).
    pub fn unsupported(&self) -> nfs_cb_resop4 {
        let op = self.opnum();
        if !op.is_known() || op == nfs_cb_opnum4::OP_CB_ILLEGAL {
            nfs_cb_resop4::Status(nfs_cb_opnum4::OP_CB_ILLEGAL, nfsstat4::NFS4ERR_OP_ILLEGAL)
        } else {
            nfs_cb_resop4::failure(op, nfsstat4::NFS4ERR_NOTSUPP)
        }
    }
}

impl Encode for nfs_cb_argop4 {
    fn encode(&self, out: &mut Vec<u8>) {
        self.opnum().encode(out);
        match self {
            nfs_cb_argop4::OP_CB_GETATTR(a) => a.encode(out),
            nfs_cb_argop4::OP_CB_RECALL(a) => a.encode(out),
            nfs_cb_argop4::OP_CB_NOTIFY(a) => a.encode(out),
            nfs_cb_argop4::OP_CB_RECALL_ANY(a) => a.encode(out),
            nfs_cb_argop4::OP_CB_RECALLABLE_OBJ_AVAIL(a) => a.encode(out),
            nfs_cb_argop4::OP_CB_RECALL_SLOT(a) => a.encode(out),
            nfs_cb_argop4::OP_CB_SEQUENCE(a) => a.encode(out),
            nfs_cb_argop4::OP_CB_WANTS_CANCELLED(a) => a.encode(out),
            nfs_cb_argop4::OP_CB_NOTIFY_LOCK(a) => a.encode(out),
            nfs_cb_argop4::OP_CB_ILLEGAL | nfs_cb_argop4::NotDecoded(_) => {}
        }
    }
}
impl Decode for nfs_cb_argop4 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(match nfs_cb_opnum4::decode(r)? {
            nfs_cb_opnum4::OP_CB_GETATTR => {
                nfs_cb_argop4::OP_CB_GETATTR(CB_GETATTR4args::decode(r)?)
            }
            nfs_cb_opnum4::OP_CB_RECALL => nfs_cb_argop4::OP_CB_RECALL(CB_RECALL4args::decode(r)?),
            nfs_cb_opnum4::OP_CB_NOTIFY => nfs_cb_argop4::OP_CB_NOTIFY(CB_NOTIFY4args::decode(r)?),
            nfs_cb_opnum4::OP_CB_RECALL_ANY => {
                nfs_cb_argop4::OP_CB_RECALL_ANY(CB_RECALL_ANY4args::decode(r)?)
            }
            nfs_cb_opnum4::OP_CB_RECALLABLE_OBJ_AVAIL => {
                nfs_cb_argop4::OP_CB_RECALLABLE_OBJ_AVAIL(CB_RECALL_ANY4args::decode(r)?)
            }
            nfs_cb_opnum4::OP_CB_RECALL_SLOT => {
                nfs_cb_argop4::OP_CB_RECALL_SLOT(CB_RECALL_SLOT4args::decode(r)?)
            }
            nfs_cb_opnum4::OP_CB_SEQUENCE => {
                nfs_cb_argop4::OP_CB_SEQUENCE(CB_SEQUENCE4args::decode(r)?)
            }
            nfs_cb_opnum4::OP_CB_WANTS_CANCELLED => {
                nfs_cb_argop4::OP_CB_WANTS_CANCELLED(CB_WANTS_CANCELLED4args::decode(r)?)
            }
            nfs_cb_opnum4::OP_CB_NOTIFY_LOCK => {
                nfs_cb_argop4::OP_CB_NOTIFY_LOCK(CB_NOTIFY_LOCK4args::decode(r)?)
            }
            nfs_cb_opnum4::OP_CB_ILLEGAL => nfs_cb_argop4::OP_CB_ILLEGAL,
            other => nfs_cb_argop4::NotDecoded(other),
        })
    }
}

/// RFC 8881 §20.2 `union nfs_cb_resop4 switch (unsigned resop)`. Every
/// callback result but CB_GETATTR's and CB_SEQUENCE's is a bare status,
/// so [`Status`](Self::Status) covers all the others. Their failures are a
/// bare status on the wire too, but decode as their own variant: build
/// failures with [`failure`](Self::failure), which picks the variant a
/// decoder would.
// CB_GETATTR's inline fattr4 is the large variant; callbacks are rare.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum nfs_cb_resop4 {
    /// §20.1 CB_GETATTR.
    OP_CB_GETATTR(CB_GETATTR4res),
    /// §20.9 CB_SEQUENCE.
    OP_CB_SEQUENCE(CB_SEQUENCE4res),
    /// Any other operation (CB_ILLEGAL included): its status.
    Status(nfs_cb_opnum4, nfsstat4),
}

impl nfs_cb_resop4 {
    /// The failed result `status` (not `NFS4_OK`) of operation `op`.
    pub fn failure(op: nfs_cb_opnum4, status: nfsstat4) -> Self {
        debug_assert!(!status.is_ok());
        match op {
            nfs_cb_opnum4::OP_CB_GETATTR => nfs_cb_resop4::OP_CB_GETATTR(Nfs4Res::Fail(status)),
            nfs_cb_opnum4::OP_CB_SEQUENCE => nfs_cb_resop4::OP_CB_SEQUENCE(Nfs4Res::Fail(status)),
            op => nfs_cb_resop4::Status(op, status),
        }
    }

    /// The operation number.
    pub fn opnum(&self) -> nfs_cb_opnum4 {
        match self {
            nfs_cb_resop4::OP_CB_GETATTR(_) => nfs_cb_opnum4::OP_CB_GETATTR,
            nfs_cb_resop4::OP_CB_SEQUENCE(_) => nfs_cb_opnum4::OP_CB_SEQUENCE,
            nfs_cb_resop4::Status(op, _) => *op,
        }
    }

    /// The operation's status.
    pub fn status(&self) -> nfsstat4 {
        match self {
            nfs_cb_resop4::OP_CB_GETATTR(r) => r.status(),
            nfs_cb_resop4::OP_CB_SEQUENCE(r) => r.status(),
            nfs_cb_resop4::Status(_, s) => *s,
        }
    }
}

impl Encode for nfs_cb_resop4 {
    fn encode(&self, out: &mut Vec<u8>) {
        self.opnum().encode(out);
        match self {
            nfs_cb_resop4::OP_CB_GETATTR(r) => r.encode(out),
            nfs_cb_resop4::OP_CB_SEQUENCE(r) => r.encode(out),
            nfs_cb_resop4::Status(_, s) => s.encode(out),
        }
    }
}
impl Decode for nfs_cb_resop4 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(match nfs_cb_opnum4::decode(r)? {
            nfs_cb_opnum4::OP_CB_GETATTR => {
                nfs_cb_resop4::OP_CB_GETATTR(CB_GETATTR4res::decode(r)?)
            }
            nfs_cb_opnum4::OP_CB_SEQUENCE => {
                nfs_cb_resop4::OP_CB_SEQUENCE(CB_SEQUENCE4res::decode(r)?)
            }
            op if op.is_known() => nfs_cb_resop4::Status(op, nfsstat4::decode(r)?),
            other => {
                return Err(DecodeError::BadDiscriminant {
                    what: "nfs_cb_resop4",
                    value: other.0,
                })
            }
        })
    }
}

/// RFC 8881 §20.2.1
/// ```text
/// struct CB_COMPOUND4args {
///         utf8str_cs      tag;
///         uint32_t        minorversion;
///         uint32_t        callback_ident;
///         nfs_cb_argop4   argarray<>;
/// };
/// ```
/// Decoding accepts at most [`MAX_CB_OPS`] operations and stops after an
/// [`nfs_cb_argop4::NotDecoded`] one, leaving the rest of the record
/// unread: decode it with [`Decode::decode`], not `decode_exact`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct CB_COMPOUND4args {
    /// To echo in the reply.
    pub tag: utf8str_cs,
    /// 1 for NFSv4.1.
    pub minorversion: u32,
    /// Unused in NFSv4.1 (NFSv4.0's callback identifier).
    pub callback_ident: u32,
    /// The operations, to answer in order.
    pub argarray: Vec<nfs_cb_argop4>,
}

impl Encode for CB_COMPOUND4args {
    fn encode(&self, out: &mut Vec<u8>) {
        self.tag.encode(out);
        out.put_u32(self.minorversion);
        out.put_u32(self.callback_ident);
        encode_array(&self.argarray, out);
    }
}
impl Decode for CB_COMPOUND4args {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        let tag = utf8str_cs::decode(r)?;
        let minorversion = r.u32("minorversion")?;
        let callback_ident = r.u32("callback_ident")?;
        let n = r.array_len(MAX_CB_OPS, 4, "CB_COMPOUND4args argarray")?;
        let mut argarray = Vec::with_capacity(n);
        for _ in 0..n {
            let op = nfs_cb_argop4::decode(r)?;
            let stop = matches!(op, nfs_cb_argop4::NotDecoded(_));
            argarray.push(op);
            if stop {
                break;
            }
        }
        Ok(Self {
            tag,
            minorversion,
            callback_ident,
            argarray,
        })
    }
}

impl CB_COMPOUND4args {
    /// Builds the reply, applying RFC 8881's rules for a CB_COMPOUND:
    /// * a minor version other than 1: `NFS4ERR_MINOR_VERS_MISMATCH` and
    ///   no results (§20.2.3);
    /// * the first operation must be CB_SEQUENCE, else it is answered
    ///   `NFS4ERR_OP_NOT_IN_SESSION`; a CB_SEQUENCE elsewhere gets
    ///   `NFS4ERR_SEQUENCE_POS` (§20.9.3);
    /// * operations the client does not handle get
    ///   [`nfs_cb_argop4::unsupported`]'s answer;
    /// * the operations are answered in order by `handle` (which sees
    ///   CB_SEQUENCE too, and returns `None` for operations it does not
    ///   handle), stopping after the first failure; the COMPOUND status is
    ///   the last result's, and the tag is echoed (§20.2.3).
    pub fn reply(
        &self,
        mut handle: impl FnMut(&nfs_cb_argop4) -> Option<nfs_cb_resop4>,
    ) -> CB_COMPOUND4res {
        let mut res = CB_COMPOUND4res {
            status: nfsstat4::NFS4_OK,
            tag: self.tag.clone(),
            resarray: Vec::with_capacity(self.argarray.len()),
        };
        if self.minorversion != 1 {
            res.status = nfsstat4::NFS4ERR_MINOR_VERS_MISMATCH;
            return res;
        }
        for (i, op) in self.argarray.iter().enumerate() {
            let is_sequence = op.opnum() == nfs_cb_opnum4::OP_CB_SEQUENCE;
            let known = op.opnum().is_known() && op.opnum() != nfs_cb_opnum4::OP_CB_ILLEGAL;
            let result = if i == 0 && !is_sequence && known {
                nfs_cb_resop4::failure(op.opnum(), nfsstat4::NFS4ERR_OP_NOT_IN_SESSION)
            } else if i > 0 && is_sequence {
                nfs_cb_resop4::failure(op.opnum(), nfsstat4::NFS4ERR_SEQUENCE_POS)
            } else if matches!(
                op,
                nfs_cb_argop4::NotDecoded(_) | nfs_cb_argop4::OP_CB_ILLEGAL
            ) {
                op.unsupported()
            } else {
                handle(op).unwrap_or_else(|| op.unsupported())
            };
            res.status = result.status();
            res.resarray.push(result);
            if !res.status.is_ok() {
                break;
            }
        }
        res
    }
}

/// RFC 8881 §20.2.2
/// ```text
/// struct CB_COMPOUND4res {
///         nfsstat4 status;
///         utf8str_cs      tag;
///         nfs_cb_resop4   resarray<>;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct CB_COMPOUND4res {
    /// The last result's status.
    pub status: nfsstat4,
    /// The request's tag.
    pub tag: utf8str_cs,
    /// The results, in order.
    pub resarray: Vec<nfs_cb_resop4>,
}

impl Encode for CB_COMPOUND4res {
    fn encode(&self, out: &mut Vec<u8>) {
        self.status.encode(out);
        self.tag.encode(out);
        encode_array(&self.resarray, out);
    }
}
impl Decode for CB_COMPOUND4res {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            status: nfsstat4::decode(r)?,
            tag: utf8str_cs::decode(r)?,
            resarray: decode_array(r, MAX_CB_OPS, 8, "CB_COMPOUND4res resarray")?,
        })
    }
}

/// Appends the RPC reply to a callback call `xid` (RFC 5531 §9: accepted,
/// AUTH_NONE verifier, SUCCESS) followed by `res`. For CB_NULL, pass no
/// results: the reply body is then empty.
pub fn encode_cb_reply(out: &mut Vec<u8>, xid: u32, res: Option<&CB_COMPOUND4res>) {
    ReplyHeader {
        xid,
        body: ReplyBody::Accepted {
            verf: OpaqueAuth::none(),
            stat: AcceptedReply::Success,
        },
    }
    .encode(out);
    if let Some(res) = res {
        res.encode(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xdr::to_bytes;

    fn cb_sequence() -> nfs_cb_argop4 {
        nfs_cb_argop4::OP_CB_SEQUENCE(CB_SEQUENCE4args {
            csa_sessionid: sessionid4([1; 16]),
            csa_sequenceid: 1,
            ..Default::default()
        })
    }

    fn answer(op: &nfs_cb_argop4) -> Option<nfs_cb_resop4> {
        match op {
            nfs_cb_argop4::OP_CB_SEQUENCE(a) => Some(a.reply_ok(0)),
            nfs_cb_argop4::OP_CB_RECALL(_) => Some(nfs_cb_resop4::Status(
                nfs_cb_opnum4::OP_CB_RECALL,
                nfsstat4::NFS4_OK,
            )),
            _ => None,
        }
    }

    #[test]
    fn recall_is_answered_after_cb_sequence() {
        let args = CB_COMPOUND4args {
            tag: "cb".into(),
            minorversion: 1,
            callback_ident: 0,
            argarray: vec![
                cb_sequence(),
                nfs_cb_argop4::OP_CB_RECALL(Default::default()),
            ],
        };
        let res = args.reply(answer);
        assert_eq!(res.status, nfsstat4::NFS4_OK);
        assert_eq!(res.tag, args.tag);
        assert_eq!(res.resarray.len(), 2);
        assert_eq!(
            CB_COMPOUND4res::decode(&mut XdrReader::new(&to_bytes(&res))).unwrap(),
            res
        );
    }

    #[test]
    fn unknown_and_unhandled_operations_get_errors_and_stop_the_reply() {
        // CB_NOTIFY is decoded but not handled: NOTSUPP; nothing after it.
        let args = CB_COMPOUND4args {
            minorversion: 1,
            argarray: vec![
                cb_sequence(),
                nfs_cb_argop4::OP_CB_NOTIFY(Default::default()),
                nfs_cb_argop4::OP_CB_RECALL(Default::default()),
            ],
            ..Default::default()
        };
        let res = args.reply(answer);
        assert_eq!(res.status, nfsstat4::NFS4ERR_NOTSUPP);
        assert_eq!(
            res.resarray[1],
            nfs_cb_resop4::Status(nfs_cb_opnum4::OP_CB_NOTIFY, nfsstat4::NFS4ERR_NOTSUPP)
        );
        assert_eq!(res.resarray.len(), 2);

        // An operation number RFC 8881 does not define: ILLEGAL. Its
        // arguments are never read.
        let mut bytes = to_bytes(&CB_COMPOUND4args {
            minorversion: 1,
            argarray: vec![cb_sequence()],
            ..Default::default()
        });
        bytes[15] = 2; // two operations
        bytes.extend_from_slice(&[0, 0, 0, 99, 0xde, 0xad, 0xbe, 0xef]);
        let args = CB_COMPOUND4args::decode(&mut XdrReader::new(&bytes)).unwrap();
        assert_eq!(
            args.argarray[1],
            nfs_cb_argop4::NotDecoded(nfs_cb_opnum4(99))
        );
        let res = args.reply(answer);
        assert_eq!(res.status, nfsstat4::NFS4ERR_OP_ILLEGAL);
        assert_eq!(res.resarray[1].opnum(), nfs_cb_opnum4::OP_CB_ILLEGAL);
    }

    #[test]
    fn session_rules() {
        let recall_first = CB_COMPOUND4args {
            minorversion: 1,
            argarray: vec![nfs_cb_argop4::OP_CB_RECALL(Default::default())],
            ..Default::default()
        };
        assert_eq!(
            recall_first.reply(answer).status,
            nfsstat4::NFS4ERR_OP_NOT_IN_SESSION
        );
        let two_sequences = CB_COMPOUND4args {
            minorversion: 1,
            argarray: vec![cb_sequence(), cb_sequence()],
            ..Default::default()
        };
        assert_eq!(
            two_sequences.reply(answer).status,
            nfsstat4::NFS4ERR_SEQUENCE_POS
        );
        let v0 = CB_COMPOUND4args {
            minorversion: 0,
            argarray: vec![cb_sequence()],
            ..Default::default()
        };
        let res = v0.reply(answer);
        assert_eq!(res.status, nfsstat4::NFS4ERR_MINOR_VERS_MISMATCH);
        assert!(res.resarray.is_empty());
    }

    #[test]
    fn huge_callback_compound_is_refused() {
        let bytes = [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
        assert!(matches!(
            CB_COMPOUND4args::decode(&mut XdrReader::new(&bytes)),
            Err(DecodeError::TooLong { .. })
        ));
    }

    #[test]
    fn cb_null_reply_is_a_bare_accepted_success() {
        let mut out = Vec::new();
        encode_cb_reply(&mut out, 0x1234, None);
        assert_eq!(
            out,
            [0, 0, 0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        );
    }
}
