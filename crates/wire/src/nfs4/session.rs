//! Client IDs and sessions (RFC 8881 §2.4, §2.10): EXCHANGE_ID,
//! CREATE_SESSION, SEQUENCE, BIND_CONN_TO_SESSION, DESTROY_SESSION,
//! DESTROY_CLIENTID and RECLAIM_COMPLETE.

use super::result::Nfs4Res;
use super::types::{
    bitmap4, client_owner4, clientid4, count4, decode_array, decode_opt_array, encode_array,
    encode_opt_array, nfs_impl_id4, nfsstat4, owner_id4, sec_oid4, sequenceid4, server_owner4,
    sessionid4, slotid4, MAX_SMALL_ARRAY, NFS4_OPAQUE_LIMIT,
};
use crate::nfs3::types::{bounded_string, xdr_struct};
use crate::rpc::AuthSys;
use crate::wire_enum;
use crate::xdr::{Decode, DecodeError, Encode, XdrReader, XdrWrite};

/// RFC 8881 §18.35.3 `EXCHGID4_FLAG_SUPP_MOVED_REFER`.
pub const EXCHGID4_FLAG_SUPP_MOVED_REFER: u32 = 0x0000_0001;
/// RFC 8881 §18.35.3 `EXCHGID4_FLAG_SUPP_MOVED_MIGR`.
pub const EXCHGID4_FLAG_SUPP_MOVED_MIGR: u32 = 0x0000_0002;
/// RFC 8881 §18.35.3 `EXCHGID4_FLAG_BIND_PRINC_STATEID`.
pub const EXCHGID4_FLAG_BIND_PRINC_STATEID: u32 = 0x0000_0100;
/// RFC 8881 §18.35.3 `EXCHGID4_FLAG_USE_NON_PNFS`.
pub const EXCHGID4_FLAG_USE_NON_PNFS: u32 = 0x0001_0000;
/// RFC 8881 §18.35.3 `EXCHGID4_FLAG_USE_PNFS_MDS`.
pub const EXCHGID4_FLAG_USE_PNFS_MDS: u32 = 0x0002_0000;
/// RFC 8881 §18.35.3 `EXCHGID4_FLAG_USE_PNFS_DS`.
pub const EXCHGID4_FLAG_USE_PNFS_DS: u32 = 0x0004_0000;
/// RFC 8881 §18.35.3 `EXCHGID4_FLAG_MASK_PNFS`.
pub const EXCHGID4_FLAG_MASK_PNFS: u32 = 0x0007_0000;
/// RFC 8881 §18.35.3 `EXCHGID4_FLAG_UPD_CONFIRMED_REC_A`.
pub const EXCHGID4_FLAG_UPD_CONFIRMED_REC_A: u32 = 0x4000_0000;
/// RFC 8881 §18.35.3 `EXCHGID4_FLAG_CONFIRMED_R`: the client ID was
/// already confirmed (this is not the first EXCHANGE_ID of this client
/// incarnation).
pub const EXCHGID4_FLAG_CONFIRMED_R: u32 = 0x8000_0000;

/// RFC 8881 §18.36.3 `CREATE_SESSION4_FLAG_PERSIST`.
pub const CREATE_SESSION4_FLAG_PERSIST: u32 = 0x0000_0001;
/// RFC 8881 §18.36.3 `CREATE_SESSION4_FLAG_CONN_BACK_CHAN`: the
/// connection carrying CREATE_SESSION is also the back channel.
pub const CREATE_SESSION4_FLAG_CONN_BACK_CHAN: u32 = 0x0000_0002;
/// RFC 8881 §18.36.3 `CREATE_SESSION4_FLAG_CONN_RDMA`.
pub const CREATE_SESSION4_FLAG_CONN_RDMA: u32 = 0x0000_0004;

/// RFC 8881 §18.46.3 `SEQ4_STATUS_CB_PATH_DOWN`.
pub const SEQ4_STATUS_CB_PATH_DOWN: u32 = 0x0000_0001;
/// RFC 8881 §18.46.3 `SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRING`.
pub const SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRING: u32 = 0x0000_0002;
/// RFC 8881 §18.46.3 `SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED`.
pub const SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED: u32 = 0x0000_0004;
/// RFC 8881 §18.46.3 `SEQ4_STATUS_EXPIRED_ALL_STATE_REVOKED`.
pub const SEQ4_STATUS_EXPIRED_ALL_STATE_REVOKED: u32 = 0x0000_0008;
/// RFC 8881 §18.46.3 `SEQ4_STATUS_EXPIRED_SOME_STATE_REVOKED`.
pub const SEQ4_STATUS_EXPIRED_SOME_STATE_REVOKED: u32 = 0x0000_0010;
/// RFC 8881 §18.46.3 `SEQ4_STATUS_ADMIN_STATE_REVOKED`.
pub const SEQ4_STATUS_ADMIN_STATE_REVOKED: u32 = 0x0000_0020;
/// RFC 8881 §18.46.3 `SEQ4_STATUS_RECALLABLE_STATE_REVOKED`.
pub const SEQ4_STATUS_RECALLABLE_STATE_REVOKED: u32 = 0x0000_0040;
/// RFC 8881 §18.46.3 `SEQ4_STATUS_LEASE_MOVED`.
pub const SEQ4_STATUS_LEASE_MOVED: u32 = 0x0000_0080;
/// RFC 8881 §18.46.3 `SEQ4_STATUS_RESTART_RECLAIM_NEEDED`.
pub const SEQ4_STATUS_RESTART_RECLAIM_NEEDED: u32 = 0x0000_0100;
/// RFC 8881 §18.46.3 `SEQ4_STATUS_CB_PATH_DOWN_SESSION`.
pub const SEQ4_STATUS_CB_PATH_DOWN_SESSION: u32 = 0x0000_0200;
/// RFC 8881 §18.46.3 `SEQ4_STATUS_BACKCHANNEL_FAULT`.
pub const SEQ4_STATUS_BACKCHANNEL_FAULT: u32 = 0x0000_0400;
/// RFC 8881 §18.46.3 `SEQ4_STATUS_DEVID_CHANGED`.
pub const SEQ4_STATUS_DEVID_CHANGED: u32 = 0x0000_0800;
/// RFC 8881 §18.46.3 `SEQ4_STATUS_DEVID_DELETED`.
pub const SEQ4_STATUS_DEVID_DELETED: u32 = 0x0000_1000;

xdr_struct!(
    /// RFC 8881 §18.35.1
    /// ```text
    /// struct state_protect_ops4 {
    ///         bitmap4 spo_must_enforce;
    ///         bitmap4 spo_must_allow;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct state_protect_ops4 {
        /// Operations that must use the machine credential.
        pub spo_must_enforce: bitmap4,
        /// Operations that may use it.
        pub spo_must_allow: bitmap4,
    }
);

/// Decodes an array of `sec_oid4` (bounded by [`MAX_SMALL_ARRAY`]).
fn decode_oids(r: &mut XdrReader<'_>, what: &'static str) -> Result<Vec<sec_oid4>, DecodeError> {
    decode_array(r, MAX_SMALL_ARRAY, 4, what)
}

/// RFC 8881 §18.35.1
/// ```text
/// struct ssv_sp_parms4 {
///         state_protect_ops4      ssp_ops;
///         sec_oid4                ssp_hash_algs<>;
///         sec_oid4                ssp_encr_algs<>;
///         uint32_t                ssp_window;
///         uint32_t                ssp_num_gss_handles;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct ssv_sp_parms4 {
    /// Operations protected by the SSV.
    pub ssp_ops: state_protect_ops4,
    /// Hash algorithms offered (at most [`MAX_SMALL_ARRAY`]).
    pub ssp_hash_algs: Vec<sec_oid4>,
    /// Encryption algorithms offered (at most [`MAX_SMALL_ARRAY`]).
    pub ssp_encr_algs: Vec<sec_oid4>,
    /// SSV window.
    pub ssp_window: u32,
    /// GSS handles wanted.
    pub ssp_num_gss_handles: u32,
}

impl Encode for ssv_sp_parms4 {
    fn encode(&self, out: &mut Vec<u8>) {
        self.ssp_ops.encode(out);
        encode_array(&self.ssp_hash_algs, out);
        encode_array(&self.ssp_encr_algs, out);
        out.put_u32(self.ssp_window);
        out.put_u32(self.ssp_num_gss_handles);
    }
}
impl Decode for ssv_sp_parms4 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            ssp_ops: state_protect_ops4::decode(r)?,
            ssp_hash_algs: decode_oids(r, "ssp_hash_algs")?,
            ssp_encr_algs: decode_oids(r, "ssp_encr_algs")?,
            ssp_window: r.u32("ssp_window")?,
            ssp_num_gss_handles: r.u32("ssp_num_gss_handles")?,
        })
    }
}

wire_enum!(
    /// RFC 8881 §18.35.1
    /// ```text
    /// enum state_protect_how4 {
    ///         SP4_NONE = 0,
    ///         SP4_MACH_CRED = 1,
    ///         SP4_SSV = 2
    /// };
    /// ```
    state_protect_how4 {
        SP4_NONE = 0,
        SP4_MACH_CRED = 1,
        SP4_SSV = 2,
    }
);

/// RFC 8881 §18.35.1
/// ```text
/// union state_protect4_a switch(state_protect_how4 spa_how) {
///         case SP4_NONE:
///                 void;
///         case SP4_MACH_CRED:
///                 state_protect_ops4      spa_mach_ops;
///         case SP4_SSV:
///                 ssv_sp_parms4           spa_ssv_parms;
/// };
/// ```
/// Any other `spa_how` cannot be decoded past (`BadDiscriminant`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub enum state_protect4_a {
    /// No state protection (what directnfs asks for).
    #[default]
    SP4_NONE,
    /// Machine-credential protection.
    SP4_MACH_CRED(state_protect_ops4),
    /// SSV protection.
    SP4_SSV(ssv_sp_parms4),
}

impl Encode for state_protect4_a {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            state_protect4_a::SP4_NONE => out.put_u32(state_protect_how4::SP4_NONE.0),
            state_protect4_a::SP4_MACH_CRED(ops) => {
                out.put_u32(state_protect_how4::SP4_MACH_CRED.0);
                ops.encode(out);
            }
            state_protect4_a::SP4_SSV(p) => {
                out.put_u32(state_protect_how4::SP4_SSV.0);
                p.encode(out);
            }
        }
    }
}
impl Decode for state_protect4_a {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        match state_protect_how4::decode(r)? {
            state_protect_how4::SP4_NONE => Ok(state_protect4_a::SP4_NONE),
            state_protect_how4::SP4_MACH_CRED => Ok(state_protect4_a::SP4_MACH_CRED(
                state_protect_ops4::decode(r)?,
            )),
            state_protect_how4::SP4_SSV => Ok(state_protect4_a::SP4_SSV(ssv_sp_parms4::decode(r)?)),
            other => Err(DecodeError::BadDiscriminant {
                what: "state_protect4_a",
                value: other.0,
            }),
        }
    }
}

/// RFC 8881 §18.35.1
/// ```text
/// struct EXCHANGE_ID4args {
///         client_owner4           eia_clientowner;
///         uint32_t                eia_flags;
///         state_protect4_a        eia_state_protect;
///         nfs_impl_id4            eia_client_impl_id<1>;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct EXCHANGE_ID4args {
    /// Who the client is (and which incarnation).
    pub eia_clientowner: client_owner4,
    /// `EXCHGID4_FLAG_*` bits.
    pub eia_flags: u32,
    /// State protection wanted.
    pub eia_state_protect: state_protect4_a,
    /// The client implementation, optionally (`<1>` on the wire).
    pub eia_client_impl_id: Option<nfs_impl_id4>,
}

impl Encode for EXCHANGE_ID4args {
    fn encode(&self, out: &mut Vec<u8>) {
        self.eia_clientowner.encode(out);
        out.put_u32(self.eia_flags);
        self.eia_state_protect.encode(out);
        encode_opt_array(&self.eia_client_impl_id, out);
    }
}
impl Decode for EXCHANGE_ID4args {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            eia_clientowner: client_owner4::decode(r)?,
            eia_flags: r.u32("eia_flags")?,
            eia_state_protect: state_protect4_a::decode(r)?,
            eia_client_impl_id: decode_opt_array(r, 20, "eia_client_impl_id")?,
        })
    }
}

bounded_string!(
    /// RFC 8881 §18.35.1 `typedef opaque gsshandle4_t<>;`, bounded here by
    /// [`NFS4_OPAQUE_LIMIT`].
    gsshandle4_t,
    NFS4_OPAQUE_LIMIT
);

/// RFC 8881 §18.35.2
/// ```text
/// struct ssv_prot_info4 {
///  state_protect_ops4     spi_ops;
///  uint32_t               spi_hash_alg;
///  uint32_t               spi_encr_alg;
///  uint32_t               spi_ssv_len;
///  uint32_t               spi_window;
///  gsshandle4_t           spi_handles<>;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct ssv_prot_info4 {
    /// Operations protected.
    pub spi_ops: state_protect_ops4,
    /// Hash algorithm chosen (index into the client's list).
    pub spi_hash_alg: u32,
    /// Encryption algorithm chosen.
    pub spi_encr_alg: u32,
    /// SSV length.
    pub spi_ssv_len: u32,
    /// SSV window.
    pub spi_window: u32,
    /// GSS handles (at most [`MAX_SMALL_ARRAY`]).
    pub spi_handles: Vec<gsshandle4_t>,
}

impl Encode for ssv_prot_info4 {
    fn encode(&self, out: &mut Vec<u8>) {
        self.spi_ops.encode(out);
        out.put_u32(self.spi_hash_alg);
        out.put_u32(self.spi_encr_alg);
        out.put_u32(self.spi_ssv_len);
        out.put_u32(self.spi_window);
        encode_array(&self.spi_handles, out);
    }
}
impl Decode for ssv_prot_info4 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            spi_ops: state_protect_ops4::decode(r)?,
            spi_hash_alg: r.u32("spi_hash_alg")?,
            spi_encr_alg: r.u32("spi_encr_alg")?,
            spi_ssv_len: r.u32("spi_ssv_len")?,
            spi_window: r.u32("spi_window")?,
            spi_handles: decode_array(r, MAX_SMALL_ARRAY, 4, "spi_handles")?,
        })
    }
}

/// RFC 8881 §18.35.2
/// ```text
/// union state_protect4_r switch(state_protect_how4 spr_how) {
///  case SP4_NONE:
///          void;
///  case SP4_MACH_CRED:
///          state_protect_ops4     spr_mach_ops;
///  case SP4_SSV:
///          ssv_prot_info4         spr_ssv_info;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub enum state_protect4_r {
    /// No state protection.
    #[default]
    SP4_NONE,
    /// Machine-credential protection.
    SP4_MACH_CRED(state_protect_ops4),
    /// SSV protection.
    SP4_SSV(ssv_prot_info4),
}

impl Encode for state_protect4_r {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            state_protect4_r::SP4_NONE => out.put_u32(state_protect_how4::SP4_NONE.0),
            state_protect4_r::SP4_MACH_CRED(ops) => {
                out.put_u32(state_protect_how4::SP4_MACH_CRED.0);
                ops.encode(out);
            }
            state_protect4_r::SP4_SSV(p) => {
                out.put_u32(state_protect_how4::SP4_SSV.0);
                p.encode(out);
            }
        }
    }
}
impl Decode for state_protect4_r {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        match state_protect_how4::decode(r)? {
            state_protect_how4::SP4_NONE => Ok(state_protect4_r::SP4_NONE),
            state_protect_how4::SP4_MACH_CRED => Ok(state_protect4_r::SP4_MACH_CRED(
                state_protect_ops4::decode(r)?,
            )),
            state_protect_how4::SP4_SSV => {
                Ok(state_protect4_r::SP4_SSV(ssv_prot_info4::decode(r)?))
            }
            other => Err(DecodeError::BadDiscriminant {
                what: "state_protect4_r",
                value: other.0,
            }),
        }
    }
}

/// RFC 8881 §18.35.2
/// ```text
/// struct EXCHANGE_ID4resok {
///  clientid4        eir_clientid;
///  sequenceid4      eir_sequenceid;
///  uint32_t         eir_flags;
///  state_protect4_r eir_state_protect;
///  server_owner4    eir_server_owner;
///  opaque           eir_server_scope<NFS4_OPAQUE_LIMIT>;
///  nfs_impl_id4     eir_server_impl_id<1>;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct EXCHANGE_ID4resok {
    /// The client ID, for CREATE_SESSION and state owners.
    pub eir_clientid: clientid4,
    /// The sequence id CREATE_SESSION must carry (`csa_sequence`).
    pub eir_sequenceid: sequenceid4,
    /// `EXCHGID4_FLAG_*` bits.
    pub eir_flags: u32,
    /// State protection granted.
    pub eir_state_protect: state_protect4_r,
    /// The server's identity, for trunking decisions.
    pub eir_server_owner: server_owner4,
    /// The server's scope: owners are comparable only within one scope.
    pub eir_server_scope: owner_id4,
    /// The server implementation, optionally.
    pub eir_server_impl_id: Option<nfs_impl_id4>,
}

impl Encode for EXCHANGE_ID4resok {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64(self.eir_clientid);
        out.put_u32(self.eir_sequenceid);
        out.put_u32(self.eir_flags);
        self.eir_state_protect.encode(out);
        self.eir_server_owner.encode(out);
        self.eir_server_scope.encode(out);
        encode_opt_array(&self.eir_server_impl_id, out);
    }
}
impl Decode for EXCHANGE_ID4resok {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            eir_clientid: r.u64("eir_clientid")?,
            eir_sequenceid: r.u32("eir_sequenceid")?,
            eir_flags: r.u32("eir_flags")?,
            eir_state_protect: state_protect4_r::decode(r)?,
            eir_server_owner: server_owner4::decode(r)?,
            eir_server_scope: owner_id4::decode(r)?,
            eir_server_impl_id: decode_opt_array(r, 20, "eir_server_impl_id")?,
        })
    }
}

/// RFC 8881 §18.35.2
/// ```text
/// union EXCHANGE_ID4res switch (nfsstat4 eir_status) {
/// case NFS4_OK:
///  EXCHANGE_ID4resok      eir_resok4;
/// default:
///  void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type EXCHANGE_ID4res = Nfs4Res<EXCHANGE_ID4resok>;

/// RFC 8881 §18.36.1
/// ```text
/// struct channel_attrs4 {
///         count4                  ca_headerpadsize;
///         count4                  ca_maxrequestsize;
///         count4                  ca_maxresponsesize;
///         count4                  ca_maxresponsesize_cached;
///         count4                  ca_maxoperations;
///         count4                  ca_maxrequests;
///         uint32_t                ca_rdma_ird<1>;
/// };
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct channel_attrs4 {
    /// Padding the server adds before the reply header (RDMA only).
    pub ca_headerpadsize: count4,
    /// Largest request, in bytes (the RPC message, without record mark).
    pub ca_maxrequestsize: count4,
    /// Largest reply, in bytes.
    pub ca_maxresponsesize: count4,
    /// Largest reply the server will keep in its reply cache: a compound
    /// with `sa_cachethis` whose reply is larger fails with
    /// `NFS4ERR_REP_TOO_BIG_TO_CACHE`.
    pub ca_maxresponsesize_cached: count4,
    /// Most operations in one COMPOUND.
    pub ca_maxoperations: count4,
    /// Slots: the most requests in flight on the channel.
    pub ca_maxrequests: count4,
    /// RDMA inbound read depth, optionally (`<1>`).
    pub ca_rdma_ird: Option<u32>,
}

impl Encode for channel_attrs4 {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.ca_headerpadsize);
        out.put_u32(self.ca_maxrequestsize);
        out.put_u32(self.ca_maxresponsesize);
        out.put_u32(self.ca_maxresponsesize_cached);
        out.put_u32(self.ca_maxoperations);
        out.put_u32(self.ca_maxrequests);
        encode_opt_array(&self.ca_rdma_ird, out);
    }
}
impl Decode for channel_attrs4 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        let b = r.array::<24>("channel_attrs4")?;
        let w = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Ok(Self {
            ca_headerpadsize: w(0),
            ca_maxrequestsize: w(4),
            ca_maxresponsesize: w(8),
            ca_maxresponsesize_cached: w(12),
            ca_maxoperations: w(16),
            ca_maxrequests: w(20),
            ca_rdma_ird: decode_opt_array(r, 4, "ca_rdma_ird")?,
        })
    }
}

wire_enum!(
    /// RFC 2203, RFC 8881 §18.29.1
    /// ```text
    /// enum rpc_gss_svc_t {
    ///         RPC_GSS_SVC_NONE        = 1,
    ///         RPC_GSS_SVC_INTEGRITY   = 2,
    ///         RPC_GSS_SVC_PRIVACY     = 3
    /// };
    /// ```
    rpc_gss_svc_t {
        RPC_GSS_SVC_NONE = 1,
        RPC_GSS_SVC_INTEGRITY = 2,
        RPC_GSS_SVC_PRIVACY = 3,
    }
);

xdr_struct!(
    /// RFC 8881 §18.33.1
    /// ```text
    /// struct gss_cb_handles4 {
    ///         rpc_gss_svc_t           gcbp_service; /* RFC 2203 */
    ///         gsshandle4_t            gcbp_handle_from_server;
    ///         gsshandle4_t            gcbp_handle_from_client;
    /// };
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct gss_cb_handles4 {
        /// Protection service.
        pub gcbp_service: rpc_gss_svc_t,
        /// The server's GSS handle.
        pub gcbp_handle_from_server: gsshandle4_t,
        /// The client's GSS handle.
        pub gcbp_handle_from_client: gsshandle4_t,
    }
);

/// RFC 8881 §18.33.1 (the flavors are RFC 5531's `AUTH_NONE` = 0,
/// `AUTH_SYS` = 1 and RFC 2203's `RPCSEC_GSS` = 6)
/// ```text
/// union callback_sec_parms4 switch (uint32_t cb_secflavor) {
/// case AUTH_NONE:
///         void;
/// case AUTH_SYS:
///         authsys_parms   cbsp_sys_cred; /* RFC 1831 */
/// case RPCSEC_GSS:
///         gss_cb_handles4 cbsp_gss_handles;
/// };
/// ```
/// Any other flavor cannot be decoded past (`BadDiscriminant`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum callback_sec_parms4 {
    /// No credential on callbacks.
    AUTH_NONE,
    /// The AUTH_SYS credential the server puts on callbacks.
    AUTH_SYS(AuthSys),
    /// GSS handles.
    RPCSEC_GSS(gss_cb_handles4),
}

impl Encode for callback_sec_parms4 {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            callback_sec_parms4::AUTH_NONE => out.put_u32(0),
            callback_sec_parms4::AUTH_SYS(cred) => {
                out.put_u32(1);
                cred.encode(out);
            }
            callback_sec_parms4::RPCSEC_GSS(h) => {
                out.put_u32(6);
                h.encode(out);
            }
        }
    }
}
impl Decode for callback_sec_parms4 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        match r.u32("cb_secflavor")? {
            0 => Ok(callback_sec_parms4::AUTH_NONE),
            1 => Ok(callback_sec_parms4::AUTH_SYS(AuthSys::decode(r)?)),
            6 => Ok(callback_sec_parms4::RPCSEC_GSS(gss_cb_handles4::decode(r)?)),
            other => Err(DecodeError::BadDiscriminant {
                what: "callback_sec_parms4",
                value: other,
            }),
        }
    }
}

/// RFC 8881 §18.36.1
/// ```text
/// struct CREATE_SESSION4args {
///         clientid4               csa_clientid;
///         sequenceid4             csa_sequence;
///         uint32_t                csa_flags;
///         channel_attrs4          csa_fore_chan_attrs;
///         channel_attrs4          csa_back_chan_attrs;
///         uint32_t                csa_cb_program;
///         callback_sec_parms4     csa_sec_parms<>;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct CREATE_SESSION4args {
    /// From EXCHANGE_ID.
    pub csa_clientid: clientid4,
    /// `eir_sequenceid` for the first session, then one more for each
    /// CREATE_SESSION (RFC 8881 §18.36.4: its own one-slot replay cache).
    pub csa_sequence: sequenceid4,
    /// `CREATE_SESSION4_FLAG_*` bits.
    pub csa_flags: u32,
    /// What the client asks for the fore channel (the server may lower it).
    pub csa_fore_chan_attrs: channel_attrs4,
    /// What the client offers for the back channel.
    pub csa_back_chan_attrs: channel_attrs4,
    /// The RPC program number the server calls back on.
    pub csa_cb_program: u32,
    /// Credentials the server may use for callbacks (at most
    /// [`MAX_SMALL_ARRAY`]).
    pub csa_sec_parms: Vec<callback_sec_parms4>,
}

impl Encode for CREATE_SESSION4args {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64(self.csa_clientid);
        out.put_u32(self.csa_sequence);
        out.put_u32(self.csa_flags);
        self.csa_fore_chan_attrs.encode(out);
        self.csa_back_chan_attrs.encode(out);
        out.put_u32(self.csa_cb_program);
        encode_array(&self.csa_sec_parms, out);
    }
}
impl Decode for CREATE_SESSION4args {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            csa_clientid: r.u64("csa_clientid")?,
            csa_sequence: r.u32("csa_sequence")?,
            csa_flags: r.u32("csa_flags")?,
            csa_fore_chan_attrs: channel_attrs4::decode(r)?,
            csa_back_chan_attrs: channel_attrs4::decode(r)?,
            csa_cb_program: r.u32("csa_cb_program")?,
            csa_sec_parms: decode_array(r, MAX_SMALL_ARRAY, 4, "csa_sec_parms")?,
        })
    }
}

xdr_struct!(
    /// RFC 8881 §18.36.2
    /// ```text
    /// struct CREATE_SESSION4resok {
    ///         sessionid4              csr_sessionid;
    ///         sequenceid4             csr_sequence;
    ///         uint32_t                csr_flags;
    ///         channel_attrs4          csr_fore_chan_attrs;
    ///         channel_attrs4          csr_back_chan_attrs;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct CREATE_SESSION4resok {
        /// The new session.
        pub csr_sessionid: sessionid4,
        /// Echoes `csa_sequence`.
        pub csr_sequence: sequenceid4,
        /// `CREATE_SESSION4_FLAG_*` bits granted.
        pub csr_flags: u32,
        /// The fore channel as granted: `ca_maxrequests` is the slot count.
        pub csr_fore_chan_attrs: channel_attrs4,
        /// The back channel as granted.
        pub csr_back_chan_attrs: channel_attrs4,
    }
);

/// RFC 8881 §18.36.2
/// ```text
/// union CREATE_SESSION4res switch (nfsstat4 csr_status) {
/// case NFS4_OK:
///         CREATE_SESSION4resok    csr_resok4;
/// default:
///         void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type CREATE_SESSION4res = Nfs4Res<CREATE_SESSION4resok>;

xdr_struct!(
    /// RFC 8881 §18.46.1
    /// ```text
    /// struct SEQUENCE4args {
    ///         sessionid4     sa_sessionid;
    ///         sequenceid4    sa_sequenceid;
    ///         slotid4        sa_slotid;
    ///         slotid4        sa_highest_slotid;
    ///         bool           sa_cachethis;
    /// };
    /// ```
    /// Fixed size (32 bytes), `Copy`: built for every request.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct SEQUENCE4args {
        /// The session.
        pub sa_sessionid: sessionid4,
        /// The slot's sequence id: one more than the last on this slot
        /// for a new request, the same for a retry.
        pub sa_sequenceid: sequenceid4,
        /// The slot.
        pub sa_slotid: slotid4,
        /// The highest slot the client has in use now.
        pub sa_highest_slotid: slotid4,
        /// Ask the server to keep the whole reply in its reply cache (not
        /// just the SEQUENCE result): needed for non-idempotent compounds.
        pub sa_cachethis: bool,
    }
);

impl SEQUENCE4args {
    /// Size of the encoding in bytes.
    pub const SIZE: usize = 32;
}

xdr_struct!(
    /// RFC 8881 §18.46.2
    /// ```text
    /// struct SEQUENCE4resok {
    ///         sessionid4      sr_sessionid;
    ///         sequenceid4     sr_sequenceid;
    ///         slotid4         sr_slotid;
    ///         slotid4         sr_highest_slotid;
    ///         slotid4         sr_target_highest_slotid;
    ///         uint32_t        sr_status_flags;
    /// };
    /// ```
    /// Fixed size (36 bytes), `Copy`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct SEQUENCE4resok {
        /// Echoes `sa_sessionid`.
        pub sr_sessionid: sessionid4,
        /// Echoes `sa_sequenceid`.
        pub sr_sequenceid: sequenceid4,
        /// Echoes `sa_slotid`.
        pub sr_slotid: slotid4,
        /// The highest slot the server will accept now.
        pub sr_highest_slotid: slotid4,
        /// The highest slot the server wants the client to use.
        pub sr_target_highest_slotid: slotid4,
        /// `SEQ4_STATUS_*` bits: news about the client's state.
        pub sr_status_flags: u32,
    }
);

impl SEQUENCE4resok {
    /// Size of the encoding in bytes.
    pub const SIZE: usize = 36;
}

/// RFC 8881 §18.46.2
/// ```text
/// union SEQUENCE4res switch (nfsstat4 sr_status) {
/// case NFS4_OK:
///         SEQUENCE4resok  sr_resok4;
/// default:
///         void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type SEQUENCE4res = Nfs4Res<SEQUENCE4resok>;

wire_enum!(
    /// RFC 8881 §18.34.1
    /// ```text
    /// enum channel_dir_from_client4 {
    ///  CDFC4_FORE             = 0x1,
    ///  CDFC4_BACK             = 0x2,
    ///  CDFC4_FORE_OR_BOTH     = 0x3,
    ///  CDFC4_BACK_OR_BOTH     = 0x7
    /// };
    /// ```
    channel_dir_from_client4 {
        CDFC4_FORE = 0x1,
        CDFC4_BACK = 0x2,
        CDFC4_FORE_OR_BOTH = 0x3,
        CDFC4_BACK_OR_BOTH = 0x7,
    }
);

wire_enum!(
    /// RFC 8881 §18.34.2
    /// ```text
    /// enum channel_dir_from_server4 {
    ///  CDFS4_FORE     = 0x1,
    ///  CDFS4_BACK     = 0x2,
    ///  CDFS4_BOTH     = 0x3
    /// };
    /// ```
    channel_dir_from_server4 {
        CDFS4_FORE = 0x1,
        CDFS4_BACK = 0x2,
        CDFS4_BOTH = 0x3,
    }
);

xdr_struct!(
    /// RFC 8881 §18.34.1 (BIND_CONN_TO_SESSION must be the only operation
    /// of its COMPOUND: no SEQUENCE before it)
    /// ```text
    /// struct BIND_CONN_TO_SESSION4args {
    ///  sessionid4     bctsa_sessid;
    ///  channel_dir_from_client4
    ///                 bctsa_dir;
    ///  bool           bctsa_use_conn_in_rdma_mode;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct BIND_CONN_TO_SESSION4args {
        /// The session to bind this connection to.
        pub bctsa_sessid: sessionid4,
        /// Which channels the connection should carry.
        pub bctsa_dir: channel_dir_from_client4,
        /// RDMA mode (false on TCP).
        pub bctsa_use_conn_in_rdma_mode: bool,
    }
);

xdr_struct!(
    /// RFC 8881 §18.34.2
    /// ```text
    /// struct BIND_CONN_TO_SESSION4resok {
    ///  sessionid4     bctsr_sessid;
    ///  channel_dir_from_server4
    ///                 bctsr_dir;
    ///  bool           bctsr_use_conn_in_rdma_mode;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct BIND_CONN_TO_SESSION4resok {
        /// Echoes the session.
        pub bctsr_sessid: sessionid4,
        /// Which channels the connection now carries.
        pub bctsr_dir: channel_dir_from_server4,
        /// RDMA mode.
        pub bctsr_use_conn_in_rdma_mode: bool,
    }
);

/// RFC 8881 §18.34.2
/// ```text
/// union BIND_CONN_TO_SESSION4res
///  switch (nfsstat4 bctsr_status) {
///  case NFS4_OK:
///   BIND_CONN_TO_SESSION4resok
///                 bctsr_resok4;
///  default:       void;
/// };
/// ```
#[allow(non_camel_case_types)]
pub type BIND_CONN_TO_SESSION4res = Nfs4Res<BIND_CONN_TO_SESSION4resok>;

xdr_struct!(
    /// RFC 8881 §18.37.1
    /// ```text
    /// struct DESTROY_SESSION4args {
    ///         sessionid4      dsa_sessionid;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct DESTROY_SESSION4args {
        /// The session to destroy.
        pub dsa_sessionid: sessionid4,
    }
);

/// RFC 8881 §18.37.2 `struct DESTROY_SESSION4res { nfsstat4 dsr_status; };`
#[allow(non_camel_case_types)]
pub type DESTROY_SESSION4res = nfsstat4;

xdr_struct!(
    /// RFC 8881 §18.50.1
    /// ```text
    /// struct DESTROY_CLIENTID4args {
    ///         clientid4       dca_clientid;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct DESTROY_CLIENTID4args {
        /// The client ID to destroy (it must have no sessions left).
        pub dca_clientid: clientid4,
    }
);

/// RFC 8881 §18.50.2 `struct DESTROY_CLIENTID4res { nfsstat4 dcr_status; };`
#[allow(non_camel_case_types)]
pub type DESTROY_CLIENTID4res = nfsstat4;

xdr_struct!(
    /// RFC 8881 §18.51.1
    /// ```text
    /// struct RECLAIM_COMPLETE4args {
    ///         /*
    ///          * If rca_one_fs TRUE,
    ///          *    CURRENT_FH: object in
    ///          *    filesystem reclaim is
    ///          *    complete for.
    ///          */
    ///         bool            rca_one_fs;
    /// };
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct RECLAIM_COMPLETE4args {
        /// False: reclaim is complete for every file system (what a client
        /// sends once after a server restart, and once after its first
        /// CREATE_SESSION).
        pub rca_one_fs: bool,
    }
);

/// RFC 8881 §18.51.2 `struct RECLAIM_COMPLETE4res { nfsstat4 rcr_status; };`
#[allow(non_camel_case_types)]
pub type RECLAIM_COMPLETE4res = nfsstat4;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nfs4::types::verifier4;
    use crate::xdr::{decode_exact, to_bytes};

    #[test]
    fn sequence_args_and_result_have_their_fixed_sizes() {
        let a = SEQUENCE4args {
            sa_sessionid: sessionid4([7; 16]),
            sa_sequenceid: 9,
            sa_slotid: 3,
            sa_highest_slotid: 63,
            sa_cachethis: true,
        };
        assert_eq!(to_bytes(&a).len(), SEQUENCE4args::SIZE);
        assert_eq!(
            to_bytes(&SEQUENCE4resok::default()).len(),
            SEQUENCE4resok::SIZE
        );
    }

    #[test]
    fn exchange_id_impl_id_is_an_array_of_at_most_one() {
        let a = EXCHANGE_ID4args {
            eia_clientowner: client_owner4 {
                co_verifier: verifier4([1; 8]),
                co_ownerid: owner_id4::from("host/1234"),
            },
            eia_flags: EXCHGID4_FLAG_USE_NON_PNFS,
            eia_state_protect: state_protect4_a::SP4_NONE,
            eia_client_impl_id: None,
        };
        let mut b = to_bytes(&a);
        assert_eq!(&b[b.len() - 4..], [0, 0, 0, 0]);
        assert_eq!(decode_exact::<EXCHANGE_ID4args>(&b, "x").unwrap(), a);
        // Two implementation ids: over the <1> bound.
        let at = b.len() - 4;
        b[at..].copy_from_slice(&[0, 0, 0, 2]);
        assert!(matches!(
            decode_exact::<EXCHANGE_ID4args>(&b, "x"),
            Err(DecodeError::TooLong {
                what: "eia_client_impl_id",
                ..
            })
        ));
    }

    #[test]
    fn unknown_callback_flavor_is_an_error() {
        assert_eq!(
            decode_exact::<callback_sec_parms4>(&[0, 0, 0, 3], "f").unwrap_err(),
            DecodeError::BadDiscriminant {
                what: "callback_sec_parms4",
                value: 3
            }
        );
    }
}
