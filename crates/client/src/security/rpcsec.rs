//! One established RPCSEC_GSS context (RFC 2203 §5.3): how a call is
//! sealed (credential, header checksum, body checksummed or wrapped) and
//! how its reply is opened (verifier checked, body checked or unwrapped).
//! Bytes in, bytes out: the socket is the caller's.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use directnfs_wire::rpc::auth::AuthFlavor;
use directnfs_wire::rpc::gss::{self, GssCred, GssProc, GssService, MAXSEQ};
use directnfs_wire::rpc::{
    encode_call_header, AcceptedReply, AuthStat, OpaqueAuth, RejectedReply, ReplyBody, ReplyHeader,
};
use directnfs_wire::xdr::pad_len;
use directnfs_wire::{Decode, Encode, XdrReader};

use super::gssapi::SecContext;
use super::window::SeqWindow;
use super::{Flavor, SecurityError};

/// An established context: the server's handle, its window, the next
/// sequence number, and the GSS-API context that makes the checksums.
#[derive(Debug)]
pub struct GssContext {
    gss: Mutex<SecContext>,
    handle: Vec<u8>,
    service: GssService,
    next_seq: AtomicU32,
    window: SeqWindow,
    server: String,
}

/// A sealed call: the record to send (no record mark) and the sequence
/// number its reply must echo.
#[derive(Debug)]
pub struct SealedCall {
    /// The call message, from the XID on.
    pub message: Vec<u8>,
    /// Its RPCSEC_GSS sequence number.
    pub seq_num: u32,
}

/// The RPCSEC_GSS service of a Kerberos flavor (RFC 2623 §2.2).
pub(crate) fn service_of(flavor: Flavor) -> GssService {
    match flavor {
        Flavor::Krb5i => GssService::RPC_GSS_SVC_INTEGRITY,
        Flavor::Krb5p => GssService::RPC_GSS_SVC_PRIVACY,
        Flavor::Sys | Flavor::Krb5 => GssService::RPC_GSS_SVC_NONE,
    }
}

impl GssContext {
    pub(crate) fn new(
        gss: SecContext,
        handle: Vec<u8>,
        flavor: Flavor,
        seq_window: u32,
        server: String,
    ) -> Self {
        Self {
            gss: Mutex::new(gss),
            handle,
            service: service_of(flavor),
            next_seq: AtomicU32::new(1),
            window: SeqWindow::new(seq_window),
            server,
        }
    }

    /// The server's sequence window: calls of this context in flight are
    /// kept within it.
    pub fn window(&self) -> &SeqWindow {
        &self.window
    }

    /// How long the context is valid from its creation (the ticket's
    /// remaining life then); `None`: no end given.
    pub fn lifetime(&self) -> Option<std::time::Duration> {
        self.gss().lifetime()
    }

    /// The server's context handle.
    pub fn handle(&self) -> &[u8] {
        &self.handle
    }

    fn gss(&self) -> std::sync::MutexGuard<'_, SecContext> {
        self.gss.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn gss_failed(&self, e: super::gssapi::GssError) -> SecurityError {
        SecurityError::Gss {
            server: self.server.clone(),
            source: e,
        }
    }

    /// Seals one call with a new sequence number: a retransmission must be
    /// sealed again (RFC 2203 §5.3.3.1: the server drops a number it has
    /// seen). The procedure's encoded arguments are the concatenation of
    /// `args` (a WRITE's data and its padding apart, never copied together
    /// first).
    pub fn seal(
        &self,
        xid: u32,
        (prog, vers, proc_): (u32, u32, u32),
        args: &[&[u8]],
    ) -> Result<SealedCall, SecurityError> {
        let seq_num = self.next_seq.fetch_add(1, Ordering::Relaxed);
        if seq_num >= MAXSEQ {
            return Err(SecurityError::ContextExhausted {
                server: self.server.clone(),
            });
        }
        let cred = GssCred {
            gss_proc: GssProc::RPCSEC_GSS_DATA,
            seq_num,
            service: self.service,
            handle: self.handle.clone(),
        }
        .to_opaque_auth();
        let args_len: usize = args.iter().map(|a| a.len()).sum();
        // Header, credential, verifier, and a token's overhead (64 bytes
        // is more than RFC 4121's 16-byte header, confounder, inner header
        // and 24-byte tag need together with the XDR lengths).
        let mut message = Vec::with_capacity(192 + self.handle.len() + args_len);
        let mut cred_bytes = Vec::with_capacity(32 + self.handle.len());
        cred.encode(&mut cred_bytes);
        encode_call_header(&mut message, xid, prog, vers, proc_, &cred_bytes);
        let mut gss = self.gss();
        // RFC 2203 §5.3.1: the verifier is the checksum of the header up
        // to and including the credential.
        let mic = gss.get_mic(&message).map_err(|e| self.gss_failed(e))?;
        OpaqueAuth {
            flavor: AuthFlavor::RPCSEC_GSS,
            body: mic,
        }
        .encode(&mut message);
        let seq = seq_num.to_be_bytes();
        let mut body: Vec<&[u8]> = Vec::with_capacity(args.len() + 1);
        body.push(&seq);
        body.extend_from_slice(args);
        match self.service {
            GssService::RPC_GSS_SVC_INTEGRITY => {
                // rpc_gss_integ_data (RFC 2203 §5.3.2.2): the data body
                // (sequence number and arguments) as an opaque, then its
                // checksum.
                let checksum = gss.get_mic_of(&body).map_err(|e| self.gss_failed(e))?;
                put_opaque_parts(&mut message, &body);
                put_opaque_parts(&mut message, &[&checksum]);
            }
            GssService::RPC_GSS_SVC_PRIVACY => {
                // rpc_gss_priv_data (§5.3.2.3): the Wrap token as an opaque,
                // made straight into the message.
                let at = message.len();
                message.extend_from_slice(&[0; 4]);
                gss.wrap_into(&body, &mut message)
                    .map_err(|e| self.gss_failed(e))?;
                let len = message.len() - at - 4;
                message[at..at + 4].copy_from_slice(&(len as u32).to_be_bytes());
                message.extend_from_slice(&[0u8; 3][..pad_len(len)]);
            }
            _ => args.iter().for_each(|a| message.extend_from_slice(a)),
        }
        Ok(SealedCall { message, seq_num })
    }

    /// Opens the reply `record` (no record mark) to the call `xid` sealed
    /// with `seq_num`: checks the verifier (RFC 2203 §5.3.3.2) and the
    /// body's checksum, unwraps a private body, and returns the
    /// procedure's results. `max_body` bounds a protected body.
    pub fn open(
        &self,
        record: &[u8],
        xid: u32,
        seq_num: u32,
        max_body: usize,
    ) -> Result<Vec<u8>, SecurityError> {
        let mut out = Vec::new();
        self.open_into(record, xid, seq_num, max_body, &mut out)?;
        Ok(out)
    }

    /// [`Self::open`], the results appended to `out` (a private body is
    /// decrypted in `out`, the only copy made of it). On an error `out`
    /// may hold part of the body: the caller drops it.
    pub fn open_into(
        &self,
        record: &[u8],
        xid: u32,
        seq_num: u32,
        max_body: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), SecurityError> {
        let malformed = |detail: String| SecurityError::Malformed {
            server: self.server.clone(),
            detail,
        };
        let mut r = XdrReader::new(record);
        let header = ReplyHeader::decode(&mut r).map_err(|e| malformed(e.to_string()))?;
        if header.xid != xid {
            return Err(malformed(format!(
                "reply XID {:#x} does not match call {xid:#x}",
                header.xid
            )));
        }
        let verf = match header.body {
            ReplyBody::Accepted {
                verf,
                stat: AcceptedReply::Success,
            } => verf,
            ReplyBody::Denied(RejectedReply::AuthError(status)) => {
                return Err(SecurityError::Rejected {
                    server: self.server.clone(),
                    status,
                })
            }
            other => return Err(malformed(format!("call not accepted: {other:?}"))),
        };
        let mut gss = self.gss();
        if verf.flavor != AuthFlavor::RPCSEC_GSS {
            return Err(SecurityError::BadVerifier {
                server: self.server.clone(),
                detail: format!("flavor {} instead of RPCSEC_GSS", verf.flavor),
            });
        }
        gss.verify_mic(&gss::reply_verifier_input(seq_num), &verf.body)
            .map_err(|e| SecurityError::BadVerifier {
                server: self.server.clone(),
                detail: e.to_string(),
            })?;
        let body = r.rest();
        match self.service {
            GssService::RPC_GSS_SVC_INTEGRITY => {
                let d =
                    gss::decode_integ_data(body, max_body).map_err(|e| malformed(e.to_string()))?;
                gss.verify_mic(d.databody, d.checksum)
                    .map_err(|e| self.gss_failed(e))?;
                let results = gss::data_body_args(d.databody, seq_num)
                    .map_err(|e| malformed(e.to_string()))?;
                out.extend_from_slice(results);
            }
            GssService::RPC_GSS_SVC_PRIVACY => {
                let wrapped =
                    gss::decode_priv_data(body, max_body).map_err(|e| malformed(e.to_string()))?;
                // Decrypted where the confounder and the sequence number
                // (20 bytes) end at `keep`, the results land right after
                // what `out` held, with no copy; those 20 bytes are put
                // back after.
                let keep = out.len();
                let start = keep.saturating_sub(BLOCK_AND_SEQ);
                let saved = out[start..].to_vec();
                out.truncate(start);
                let range = gss
                    .unwrap_append(wrapped, out)
                    .map_err(|e| self.gss_failed(e))?;
                let results_len = gss::data_body_args(&out[range.clone()], seq_num)
                    .map_err(|e| malformed(e.to_string()))?
                    .len();
                let results_at = range.end - results_len;
                if results_at != keep {
                    // Another layout (MIT's path): move the results.
                    if out.len() < keep + results_len {
                        out.resize(keep + results_len, 0);
                    }
                    out.copy_within(results_at..results_at + results_len, keep);
                }
                out[start..keep].copy_from_slice(&saved);
                out.truncate(keep + results_len);
            }
            _ => out.extend_from_slice(body),
        }
        Ok(())
    }
}

/// A Wrap token's confounder (one AES block) and the data body's sequence
/// number: what precedes a private reply's results once decrypted.
const BLOCK_AND_SEQ: usize = 16 + 4;

/// Appends the XDR opaque (length, bytes, padding) whose bytes are the
/// concatenation of `parts`.
fn put_opaque_parts(out: &mut Vec<u8>, parts: &[&[u8]]) {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    out.extend_from_slice(&(len as u32).to_be_bytes());
    parts.iter().for_each(|p| out.extend_from_slice(p));
    out.extend_from_slice(&[0u8; 3][..pad_len(len)]);
}

/// An INIT or CONTINUE_INIT call (RFC 2203 §5.2.2): a NULL procedure call
/// whose credential has no handle yet (or the one the server gave) and
/// whose arguments are the GSS token.
pub(crate) fn init_call(
    xid: u32,
    (prog, vers): (u32, u32),
    service: GssService,
    handle: &[u8],
    token: &[u8],
) -> Vec<u8> {
    let gss_proc = if handle.is_empty() {
        GssProc::RPCSEC_GSS_INIT
    } else {
        GssProc::RPCSEC_GSS_CONTINUE_INIT
    };
    let mut cred = Vec::with_capacity(32 + handle.len());
    GssCred {
        gss_proc,
        seq_num: 0,
        service,
        handle: handle.to_vec(),
    }
    .to_opaque_auth()
    .encode(&mut cred);
    OpaqueAuth::none().encode(&mut cred);
    let mut message = Vec::with_capacity(64 + cred.len() + token.len());
    encode_call_header(&mut message, xid, prog, vers, 0, &cred);
    gss::encode_init_arg(&mut message, token);
    message
}

/// The verifier and `rpc_gss_init_res` of an INIT reply, or why the
/// server refused.
pub(crate) fn init_reply(
    record: &[u8],
    xid: u32,
    server: &str,
) -> Result<(OpaqueAuth, gss::GssInitRes), SecurityError> {
    let malformed = |detail: String| SecurityError::Malformed {
        server: server.to_owned(),
        detail,
    };
    let mut r = XdrReader::new(record);
    let header = ReplyHeader::decode(&mut r).map_err(|e| malformed(e.to_string()))?;
    if header.xid != xid {
        return Err(malformed(format!(
            "INIT reply XID {:#x} is not {xid:#x}",
            header.xid
        )));
    }
    match header.body {
        ReplyBody::Accepted {
            verf,
            stat: AcceptedReply::Success,
        } => {
            let res = gss::GssInitRes::decode(&mut r).map_err(|e| malformed(e.to_string()))?;
            Ok((verf, res))
        }
        ReplyBody::Denied(RejectedReply::AuthError(status)) => Err(SecurityError::Rejected {
            server: server.to_owned(),
            status,
        }),
        other => Err(malformed(format!("INIT not accepted: {other:?}"))),
    }
}

/// What an AUTH_ERROR of a Kerberos call means, in words (RFC 2203
/// §5.3.3.3 adds the two RPCSEC_GSS values).
pub(crate) fn describe_auth(status: AuthStat) -> &'static str {
    match status {
        AuthStat::RPCSEC_GSS_CREDPROBLEM => {
            "the server cannot use the credential (RPCSEC_GSS_CREDPROBLEM)"
        }
        AuthStat::RPCSEC_GSS_CTXPROBLEM => {
            "the server lost or refused the context (RPCSEC_GSS_CTXPROBLEM)"
        }
        AuthStat::AUTH_TOOWEAK => "the export does not take this flavor (AUTH_TOOWEAK)",
        _ => "the server refused the credential",
    }
}
