//! RPC-with-TLS (RFC 9289 §4.1): the AUTH_TLS probe and the server's
//! answer to it.
//!
//! ```text
//! A client sends a NULL call whose credential is AUTH_TLS (flavor 7,
//! empty body) and whose verifier is AUTH_NONE. A server that does
//! RPC-with-TLS accepts it with SUCCESS and the verifier
//!     flavor AUTH_NONE, body "STARTTLS"
//! and the TLS handshake starts on the same connection.
//! ```

use super::auth::AuthFlavor;
use super::msg::{encode_call_header, AcceptedReply, RejectedReply, ReplyBody, ReplyHeader};
use crate::xdr::{Decode, DecodeError, XdrReader};

/// The verifier body of a server's acceptance of the AUTH_TLS probe.
pub const STARTTLS: &[u8] = b"STARTTLS";

/// The body (no record mark) of the AUTH_TLS probe: NULL (procedure 0) of
/// `prog`/`vers` with the credential AUTH_TLS and the verifier AUTH_NONE,
/// both empty.
pub fn probe_call(xid: u32, prog: u32, vers: u32) -> Vec<u8> {
    null_call(xid, prog, vers, AuthFlavor::AUTH_TLS)
}

/// The body (no record mark) of a NULL call of `prog`/`vers` whose
/// credential has flavor `cred` (empty body), verifier AUTH_NONE.
pub fn null_call(xid: u32, prog: u32, vers: u32, cred: AuthFlavor) -> Vec<u8> {
    let mut auth = Vec::with_capacity(16);
    for w in [cred.0, 0, AuthFlavor::AUTH_NONE.0, 0] {
        auth.extend_from_slice(&w.to_be_bytes());
    }
    let mut body = Vec::with_capacity(64);
    encode_call_header(&mut body, xid, prog, vers, 0, &auth);
    body
}

/// How a server answered the AUTH_TLS probe (RFC 9289 §4.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeAnswer {
    /// Accepted with the AUTH_NONE verifier `STARTTLS`: start TLS.
    StartTls,
    /// Accepted, but with another verifier: the server took the probe as
    /// an ordinary NULL call (it does not do RPC-with-TLS).
    NoStartTls {
        /// The verifier's flavor.
        flavor: AuthFlavor,
        /// The verifier body's length (its contents are not kept).
        len: usize,
    },
    /// Accepted with a status other than SUCCESS.
    NotSuccess(AcceptedReply),
    /// Denied (AUTH_ERROR: the server does not know AUTH_TLS, or an RPC
    /// version mismatch).
    Denied(RejectedReply),
    /// The answer to another call: its xid.
    OtherXid(u32),
}

/// Reads a server's answer to the probe sent with `xid` from one whole
/// reply record (its fragments joined, no marks). Bounded by the record:
/// a malformed or truncated reply is an error, never a panic.
pub fn probe_answer(record: &[u8], xid: u32) -> Result<ProbeAnswer, DecodeError> {
    let header = ReplyHeader::decode(&mut XdrReader::new(record))?;
    if header.xid != xid {
        return Ok(ProbeAnswer::OtherXid(header.xid));
    }
    Ok(match header.body {
        ReplyBody::Accepted {
            verf,
            stat: AcceptedReply::Success,
        } => {
            if verf.flavor == AuthFlavor::AUTH_NONE && verf.body == STARTTLS {
                ProbeAnswer::StartTls
            } else {
                ProbeAnswer::NoStartTls {
                    flavor: verf.flavor,
                    len: verf.body.len(),
                }
            }
        }
        ReplyBody::Accepted { stat, .. } => ProbeAnswer::NotSuccess(stat),
        ReplyBody::Denied(r) => ProbeAnswer::Denied(r),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(words: &[u32], verf: &[u8]) -> Vec<u8> {
        let mut out: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
        out.extend_from_slice(&(verf.len() as u32).to_be_bytes());
        out.extend_from_slice(verf);
        out.extend_from_slice(&0u32.to_be_bytes()); // SUCCESS
        out
    }

    #[test]
    fn probe_is_a_null_call_with_auth_tls() {
        let words: Vec<u32> = probe_call(0x8000_0001, 100_005, 3)
            .chunks(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        // xid, CALL, rpcvers 2, prog, vers, proc 0, cred AUTH_TLS/0, verf AUTH_NONE/0.
        assert_eq!(words, vec![0x8000_0001, 0, 2, 100_005, 3, 0, 7, 0, 0, 0]);
    }

    #[test]
    fn starttls_verifier_starts_tls() {
        let r = reply(&[9, 1, 0, 0], b"STARTTLS");
        assert_eq!(probe_answer(&r, 9).unwrap(), ProbeAnswer::StartTls);
    }

    #[test]
    fn an_empty_verifier_is_a_server_without_tls() {
        let r = reply(&[9, 1, 0, 0], b"");
        assert_eq!(
            probe_answer(&r, 9).unwrap(),
            ProbeAnswer::NoStartTls {
                flavor: AuthFlavor::AUTH_NONE,
                len: 0
            }
        );
    }

    #[test]
    fn another_xid_is_not_an_answer() {
        let r = reply(&[8, 1, 0, 0], b"STARTTLS");
        assert_eq!(probe_answer(&r, 9).unwrap(), ProbeAnswer::OtherXid(8));
    }

    #[test]
    fn rejects_a_truncated_reply() {
        let r = reply(&[9, 1, 0, 0], b"STARTTLS");
        for n in 0..r.len() - 4 {
            assert!(probe_answer(&r[..n], 9).is_err(), "{n} bytes accepted");
        }
    }
}
