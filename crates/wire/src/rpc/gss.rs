//! RPCSEC_GSS version 1 (RFC 2203): the credential, the context creation
//! arguments and results, and the integrity and privacy body forms.
//!
//! Pure byte work: the GSS-API calls that make and check the checksums
//! (MICs) and wrap tokens are the caller's. This module says which bytes
//! go into them and where their results go.

use crate::rpc::auth::{AuthFlavor, OpaqueAuth, MAX_AUTH_BODY};
use crate::wire_enum;
use crate::xdr::{Decode, DecodeError, Encode, XdrReader, XdrWrite};

/// RFC 2203 §5: `RPCSEC_GSS_VERS_1`, the only credential version.
pub const RPCSEC_GSS_VERS_1: u32 = 1;

/// RFC 2203 §5: sequence numbers are below `MAXSEQ`; a context whose
/// number would reach it must be replaced.
pub const MAXSEQ: u32 = 0x8000_0000;

/// The longest context handle accepted: the credential that carries it
/// must fit an `opaque_auth` body (RFC 5531 §8.2: 400 bytes) with the
/// credential's four words.
pub const MAX_GSS_HANDLE: usize = MAX_AUTH_BODY - 20;

/// The longest GSS token accepted in `rpc_gss_init_res` (Kerberos AP-REP
/// tokens are a few hundred bytes; 64 KiB leaves room for PAC-laden ones).
pub const MAX_GSS_TOKEN: usize = 64 * 1024;

/// The longest checksum accepted in `rpc_gss_integ_data` (Kerberos MICs
/// are under 100 bytes).
pub const MAX_GSS_CHECKSUM: usize = 4096;

wire_enum!(
    /// RFC 2203 §5 `rpc_gss_proc_t`.
    GssProc {
        RPCSEC_GSS_DATA = 0,
        RPCSEC_GSS_INIT = 1,
        RPCSEC_GSS_CONTINUE_INIT = 2,
        RPCSEC_GSS_DESTROY = 3,
    }
);

wire_enum!(
    /// RFC 2203 §5 `rpc_gss_service_t` (the RFC spells the values in lower
    /// case): what protects a data call's body.
    GssService {
        /// Authentication only: the header's checksum is in the verifier.
        RPC_GSS_SVC_NONE = 1,
        /// Integrity: the body is `rpc_gss_integ_data`.
        RPC_GSS_SVC_INTEGRITY = 2,
        /// Privacy: the body is `rpc_gss_priv_data`.
        RPC_GSS_SVC_PRIVACY = 3,
    }
);

/// RFC 2203 §5, version 1 of `rpc_gss_cred_t`, with its version word:
/// ```text
/// union rpc_gss_cred_t switch (unsigned int version) {
///     case RPCSEC_GSS_VERS_1:
///         struct {
///             rpc_gss_proc_t gss_proc;
///             unsigned int seq_num;
///             rpc_gss_service_t service;
///             opaque handle<>;
///         } rpc_gss_cred_vers_1_t;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GssCred {
    /// DATA for calls on an established context, else INIT,
    /// CONTINUE_INIT or DESTROY.
    pub gss_proc: GssProc,
    /// The call's sequence number (RFC 2203 §5.3.3.1); ignored by the
    /// server for INIT and CONTINUE_INIT.
    pub seq_num: u32,
    /// How the body is protected.
    pub service: GssService,
    /// The server's context handle; empty for INIT.
    pub handle: Vec<u8>,
}

impl Encode for GssCred {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(RPCSEC_GSS_VERS_1);
        self.gss_proc.encode(out);
        out.put_u32(self.seq_num);
        self.service.encode(out);
        out.put_opaque(&self.handle);
    }
}

impl Decode for GssCred {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        let version = r.u32("rpc_gss_cred_t version")?;
        if version != RPCSEC_GSS_VERS_1 {
            return Err(DecodeError::BadDiscriminant {
                what: "rpc_gss_cred_t version",
                value: version,
            });
        }
        Ok(Self {
            gss_proc: GssProc::decode(r)?,
            seq_num: r.u32("rpc_gss_cred_vers_1_t seq_num")?,
            service: GssService::decode(r)?,
            handle: r.opaque(MAX_GSS_HANDLE, "rpc_gss_cred handle")?.to_vec(),
        })
    }
}

impl GssCred {
    /// The credential as the call header's `opaque_auth` (flavor
    /// RPCSEC_GSS, RFC 2203 §5).
    pub fn to_opaque_auth(&self) -> OpaqueAuth {
        let mut body = Vec::with_capacity(20 + self.handle.len());
        self.encode(&mut body);
        OpaqueAuth {
            flavor: AuthFlavor::RPCSEC_GSS,
            body,
        }
    }
}

/// RFC 2203 §5.2.2: the arguments of an INIT or CONTINUE_INIT call (a NULL
/// procedure call of the target program), `struct rpc_gss_init_arg {
/// opaque gss_token<>; }`: the token GSS_Init_sec_context made.
pub fn encode_init_arg(out: &mut Vec<u8>, gss_token: &[u8]) {
    out.put_opaque(gss_token);
}

/// RFC 2203 §5.2.3.1 `rpc_gss_init_res`:
/// ```text
/// struct rpc_gss_init_res {
///     opaque handle<>;
///     unsigned int gss_major;
///     unsigned int gss_minor;
///     unsigned int seq_window;
///     opaque gss_token<>;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GssInitRes {
    /// The context handle the client sends in every later credential.
    pub handle: Vec<u8>,
    /// GSS major status of the server's GSS_Accept_sec_context.
    pub gss_major: u32,
    /// GSS minor (mechanism) status.
    pub gss_minor: u32,
    /// How many sequence numbers the server accepts out of order: the
    /// client keeps its calls in flight within it (RFC 2203 §5.3.3.1).
    pub seq_window: u32,
    /// The token for the client's next GSS_Init_sec_context, if any.
    pub gss_token: Vec<u8>,
}

/// GSS_S_COMPLETE (RFC 2744 §3.9.1): the context is established.
pub const GSS_S_COMPLETE: u32 = 0;
/// GSS_S_CONTINUE_NEEDED (RFC 2744 §3.9.1): another token round follows.
pub const GSS_S_CONTINUE_NEEDED: u32 = 1;

impl Encode for GssInitRes {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_opaque(&self.handle);
        out.put_u32(self.gss_major);
        out.put_u32(self.gss_minor);
        out.put_u32(self.seq_window);
        out.put_opaque(&self.gss_token);
    }
}

impl Decode for GssInitRes {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            handle: r
                .opaque(MAX_GSS_HANDLE, "rpc_gss_init_res handle")?
                .to_vec(),
            gss_major: r.u32("rpc_gss_init_res gss_major")?,
            gss_minor: r.u32("rpc_gss_init_res gss_minor")?,
            seq_window: r.u32("rpc_gss_init_res seq_window")?,
            gss_token: r
                .opaque(MAX_GSS_TOKEN, "rpc_gss_init_res gss_token")?
                .to_vec(),
        })
    }
}

/// RFC 2203 §5.3.1: the call verifier of a DATA call is the checksum
/// (GSS_GetMIC) of the header from the XID up to and including the
/// credential. `call` starts at the XID (no record mark); `cred_end` is
/// the offset just past the credential. `None` if `call` is shorter.
pub fn call_verifier_input(call: &[u8], cred_end: usize) -> Option<&[u8]> {
    call.get(..cred_end)
}

/// RFC 2203 §5.3.3.2: the reply verifier of a DATA call is the checksum of
/// the call's sequence number, as one XDR unsigned int; for an INIT or
/// CONTINUE_INIT reply that completes the context (§5.2.3.1) it is the
/// checksum of `seq_window` in the same form.
pub fn reply_verifier_input(seq_num_or_window: u32) -> [u8; 4] {
    seq_num_or_window.to_be_bytes()
}

/// RFC 2203 §5.3.2.2 `rpc_gss_data_t` as the checksummed or wrapped
/// plaintext: the sequence number, then the procedure's arguments or
/// results as already encoded.
pub fn encode_data_body(out: &mut Vec<u8>, seq_num: u32, args: &[u8]) {
    out.put_u32(seq_num);
    out.extend_from_slice(args);
}

/// RFC 2203 §5.3.2.2: the procedure arguments or results of a
/// `rpc_gss_data_t` plaintext, after checking that its sequence number is
/// the call's (§5.3.3.1: the server echoes it).
pub fn data_body_args(plain: &[u8], expected_seq: u32) -> Result<&[u8], DecodeError> {
    let mut r = XdrReader::new(plain);
    let seq = r.u32("rpc_gss_data_t seq_num")?;
    if seq != expected_seq {
        return Err(DecodeError::BadDiscriminant {
            what: "rpc_gss_data_t seq_num (not the call's)",
            value: seq,
        });
    }
    Ok(r.rest())
}

/// RFC 2203 §5.3.2.2 `rpc_gss_integ_data`:
/// ```text
/// struct rpc_gss_integ_data {
///     opaque databody_integ<>;
///     opaque checksum<>;
/// };
/// ```
/// `databody_integ` is an encoded `rpc_gss_data_t`; `checksum` is
/// GSS_GetMIC of exactly those bytes.
pub fn encode_integ_data(out: &mut Vec<u8>, databody: &[u8], checksum: &[u8]) {
    out.put_opaque(databody);
    out.put_opaque(checksum);
}

/// The parts of a received `rpc_gss_integ_data`, borrowed from the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntegData<'a> {
    /// The encoded `rpc_gss_data_t` that the checksum covers.
    pub databody: &'a [u8],
    /// GSS_GetMIC of `databody`.
    pub checksum: &'a [u8],
}

/// Decodes `rpc_gss_integ_data` (RFC 2203 §5.3.2.2) from the results of an
/// accepted reply; `max_body` bounds the data body (the caller's record
/// limit). The whole input must be consumed.
pub fn decode_integ_data(bytes: &[u8], max_body: usize) -> Result<IntegData<'_>, DecodeError> {
    let mut r = XdrReader::new(bytes);
    let databody = r.opaque(max_body, "rpc_gss_integ_data databody_integ")?;
    let checksum = r.opaque(MAX_GSS_CHECKSUM, "rpc_gss_integ_data checksum")?;
    r.finish("rpc_gss_integ_data")?;
    Ok(IntegData { databody, checksum })
}

/// RFC 2203 §5.3.2.3 `struct rpc_gss_priv_data { opaque databody_priv<>; }`:
/// `databody_priv` is GSS_Wrap (confidentiality on) of an encoded
/// `rpc_gss_data_t`.
pub fn encode_priv_data(out: &mut Vec<u8>, wrapped: &[u8]) {
    out.put_opaque(wrapped);
}

/// Decodes `rpc_gss_priv_data` (RFC 2203 §5.3.2.3): the wrap token, to be
/// unwrapped by the caller. `max_body` bounds it; the whole input must be
/// consumed.
pub fn decode_priv_data(bytes: &[u8], max_body: usize) -> Result<&[u8], DecodeError> {
    let mut r = XdrReader::new(bytes);
    let wrapped = r.opaque(max_body, "rpc_gss_priv_data databody_priv")?;
    r.finish("rpc_gss_priv_data")?;
    Ok(wrapped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xdr::{decode_exact, to_bytes};

    #[test]
    fn cred_golden_bytes() {
        let c = GssCred {
            gss_proc: GssProc::RPCSEC_GSS_DATA,
            seq_num: 7,
            service: GssService::RPC_GSS_SVC_INTEGRITY,
            handle: vec![0xaa, 0xbb, 0xcc],
        };
        let bytes = to_bytes(&c);
        assert_eq!(
            bytes,
            [
                0, 0, 0, 1, // version
                0, 0, 0, 0, // DATA
                0, 0, 0, 7, // seq_num
                0, 0, 0, 2, // integrity
                0, 0, 0, 3, 0xaa, 0xbb, 0xcc, 0, // handle<>
            ]
        );
        assert_eq!(decode_exact::<GssCred>(&bytes, "cred").unwrap(), c);
        let auth = c.to_opaque_auth();
        assert_eq!(auth.flavor, AuthFlavor::RPCSEC_GSS);
        assert_eq!(auth.body, bytes);
    }

    #[test]
    fn cred_of_another_version_is_refused() {
        let mut bytes = to_bytes(&GssCred {
            gss_proc: GssProc::RPCSEC_GSS_INIT,
            seq_num: 0,
            service: GssService::RPC_GSS_SVC_NONE,
            handle: vec![],
        });
        bytes[3] = 2;
        assert!(matches!(
            decode_exact::<GssCred>(&bytes, "cred"),
            Err(DecodeError::BadDiscriminant { value: 2, .. })
        ));
    }

    #[test]
    fn cred_handle_longer_than_an_auth_body_is_refused() {
        let mut bytes = vec![0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1];
        bytes.put_u32(MAX_GSS_HANDLE as u32 + 1);
        bytes.resize(bytes.len() + MAX_GSS_HANDLE + 4, 0);
        assert!(matches!(
            decode_exact::<GssCred>(&bytes, "cred"),
            Err(DecodeError::TooLong { .. })
        ));
    }

    #[test]
    fn init_res_golden_bytes() {
        let res = GssInitRes {
            handle: vec![1, 2, 3, 4],
            gss_major: GSS_S_COMPLETE,
            gss_minor: 0,
            seq_window: 32,
            gss_token: vec![9, 8, 7, 6, 5],
        };
        let bytes = to_bytes(&res);
        assert_eq!(
            bytes,
            [
                0, 0, 0, 4, 1, 2, 3, 4, // handle
                0, 0, 0, 0, // major
                0, 0, 0, 0, // minor
                0, 0, 0, 32, // window
                0, 0, 0, 5, 9, 8, 7, 6, 5, 0, 0, 0, // token
            ]
        );
        assert_eq!(decode_exact::<GssInitRes>(&bytes, "init").unwrap(), res);
    }

    #[test]
    fn init_res_truncated_is_an_error() {
        let bytes = to_bytes(&GssInitRes {
            handle: vec![1; 16],
            seq_window: 32,
            ..Default::default()
        });
        for cut in 0..bytes.len() {
            assert!(decode_exact::<GssInitRes>(&bytes[..cut], "init").is_err());
        }
    }

    #[test]
    fn init_arg_is_one_opaque() {
        let mut out = Vec::new();
        encode_init_arg(&mut out, &[1, 2, 3, 4, 5]);
        assert_eq!(out, [0, 0, 0, 5, 1, 2, 3, 4, 5, 0, 0, 0]);
    }

    #[test]
    fn integ_data_roundtrip_and_seq_check() {
        let mut plain = Vec::new();
        encode_data_body(&mut plain, 42, &[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(plain, [0, 0, 0, 42, 0xde, 0xad, 0xbe, 0xef]);
        let mut out = Vec::new();
        encode_integ_data(&mut out, &plain, &[7; 5]);
        let d = decode_integ_data(&out, 1 << 20).unwrap();
        assert_eq!(d.databody, &plain[..]);
        assert_eq!(d.checksum, &[7; 5]);
        assert_eq!(
            data_body_args(d.databody, 42).unwrap(),
            [0xde, 0xad, 0xbe, 0xef]
        );
        assert!(matches!(
            data_body_args(d.databody, 43),
            Err(DecodeError::BadDiscriminant { value: 42, .. })
        ));
        assert!(decode_integ_data(&out, 4).is_err(), "body over the bound");
        let mut trailing = out.clone();
        trailing.extend_from_slice(&[0; 4]);
        assert!(decode_integ_data(&trailing, 1 << 20).is_err());
    }

    #[test]
    fn priv_data_roundtrip() {
        let mut out = Vec::new();
        encode_priv_data(&mut out, &[1, 2, 3]);
        assert_eq!(out, [0, 0, 0, 3, 1, 2, 3, 0]);
        assert_eq!(decode_priv_data(&out, 1 << 20).unwrap(), [1, 2, 3]);
        assert!(decode_priv_data(&out[..6], 1 << 20).is_err());
        assert!(decode_priv_data(&out, 2).is_err());
    }

    #[test]
    fn verifier_inputs() {
        let call = [1u8; 40];
        assert_eq!(call_verifier_input(&call, 32).unwrap().len(), 32);
        assert!(call_verifier_input(&call, 41).is_none());
        assert_eq!(reply_verifier_input(0x0102_0304), [1, 2, 3, 4]);
    }
}
