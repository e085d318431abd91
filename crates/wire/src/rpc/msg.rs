//! RPC messages (RFC 5531 §9): the call header a client sends and the reply
//! header it receives. Procedure arguments follow the call header and
//! procedure results follow an accepted SUCCESS reply; those belong to the
//! program modules (`nfs3`, `mount`, `portmap`).

use super::auth::OpaqueAuth;
use crate::wire_enum;
use crate::xdr::{Decode, DecodeError, Encode, XdrReader, XdrWrite};

/// The only RPC protocol version there is.
pub const RPC_VERSION: u32 = 2;

wire_enum!(
    /// RFC 5531 §9 `msg_type`.
    MsgType { CALL = 0, REPLY = 1 }
);
wire_enum!(
    /// RFC 5531 §9 `reply_stat`.
    ReplyStat { MSG_ACCEPTED = 0, MSG_DENIED = 1 }
);
wire_enum!(
    /// RFC 5531 §9 `accept_stat`.
    AcceptStat {
        SUCCESS = 0,
        PROG_UNAVAIL = 1,
        PROG_MISMATCH = 2,
        PROC_UNAVAIL = 3,
        GARBAGE_ARGS = 4,
        SYSTEM_ERR = 5,
    }
);
wire_enum!(
    /// RFC 5531 §9 `reject_stat`.
    RejectStat { RPC_MISMATCH = 0, AUTH_ERROR = 1 }
);
wire_enum!(
    /// RFC 5531 §9 `auth_stat`.
    AuthStat {
        AUTH_OK = 0,
        AUTH_BADCRED = 1,
        AUTH_REJECTEDCRED = 2,
        AUTH_BADVERF = 3,
        AUTH_REJECTEDVERF = 4,
        AUTH_TOOWEAK = 5,
        AUTH_INVALIDRESP = 6,
        AUTH_FAILED = 7,
        AUTH_KERB_GENERIC = 8,
        AUTH_TIMEEXPIRE = 9,
        AUTH_TKT_FILE = 10,
        AUTH_DECODE = 11,
        AUTH_NET_ADDR = 12,
        RPCSEC_GSS_CREDPROBLEM = 13,
        RPCSEC_GSS_CTXPROBLEM = 14,
    }
);

/// RFC 5531 §9
/// ```text
/// struct rpc_msg { unsigned int xid; union switch (msg_type mtype) {
///     case CALL: call_body cbody; case REPLY: reply_body rbody; } body; };
/// struct call_body {
///     unsigned int rpcvers;       /* must be equal to two (2) */
///     unsigned int prog;
///     unsigned int vers;
///     unsigned int proc;
///     opaque_auth cred;
///     opaque_auth verf;
///     /* procedure-specific parameters start here */
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallHeader {
    /// Transaction id chosen by the client.
    pub xid: u32,
    /// Program number.
    pub prog: u32,
    /// Program version.
    pub vers: u32,
    /// Procedure number.
    pub proc_: u32,
    /// Credential.
    pub cred: OpaqueAuth,
    /// Verifier.
    pub verf: OpaqueAuth,
}

impl Encode for CallHeader {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.xid);
        out.put_u32(MsgType::CALL.0);
        out.put_u32(RPC_VERSION);
        out.put_u32(self.prog);
        out.put_u32(self.vers);
        out.put_u32(self.proc_);
        self.cred.encode(out);
        self.verf.encode(out);
    }
}

impl Decode for CallHeader {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        let xid = r.u32("xid")?;
        let mtype = MsgType::decode(r)?;
        if mtype != MsgType::CALL {
            return Err(DecodeError::BadDiscriminant {
                what: "msg_type (expected CALL)",
                value: mtype.0,
            });
        }
        let rpcvers = r.u32("rpcvers")?;
        if rpcvers != RPC_VERSION {
            return Err(DecodeError::BadDiscriminant {
                what: "rpcvers",
                value: rpcvers,
            });
        }
        Ok(Self {
            xid,
            prog: r.u32("prog")?,
            vers: r.u32("vers")?,
            proc_: r.u32("proc")?,
            cred: OpaqueAuth::decode(r)?,
            verf: OpaqueAuth::decode(r)?,
        })
    }
}

/// Hot-path call header encoder: `cred_and_verf` is the already encoded
/// pair of `opaque_auth`s, computed once per client, so encoding a call costs
/// six integer stores and one copy.
#[inline]
pub fn encode_call_header(
    out: &mut Vec<u8>,
    xid: u32,
    prog: u32,
    vers: u32,
    proc_: u32,
    cred_and_verf: &[u8],
) {
    out.put_u32(xid);
    out.put_u32(MsgType::CALL.0);
    out.put_u32(RPC_VERSION);
    out.put_u32(prog);
    out.put_u32(vers);
    out.put_u32(proc_);
    out.extend_from_slice(cred_and_verf);
}

/// The `msg_type` of an RPC message (its second word), without decoding
/// the rest: on an NFSv4.1 connection the server sends both replies to the
/// client's calls and calls of its own (the back channel, RFC 8881
/// §2.10.3.1), and a driver must tell them apart. `None` if `record` is
/// shorter than 8 bytes.
pub fn peek_msg_type(record: &[u8]) -> Option<MsgType> {
    let w = record.get(4..8)?;
    Some(MsgType(u32::from_be_bytes([w[0], w[1], w[2], w[3]])))
}

/// RFC 5531 §9 `accepted_reply`, with the results left in the reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcceptedReply {
    /// SUCCESS: procedure results follow.
    Success,
    /// PROG_MISMATCH with the versions the server does support.
    ProgMismatch {
        /// Lowest version supported.
        low: u32,
        /// Highest version supported.
        high: u32,
    },
    /// Any other accept_stat (PROG_UNAVAIL, PROC_UNAVAIL, GARBAGE_ARGS,
    /// SYSTEM_ERR, or a value unknown to us): no body.
    Error(AcceptStat),
}

/// RFC 5531 §9 `rejected_reply`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RejectedReply {
    /// RPC_MISMATCH with the RPC versions the server supports.
    RpcMismatch {
        /// Lowest version supported.
        low: u32,
        /// Highest version supported.
        high: u32,
    },
    /// AUTH_ERROR with the reason.
    AuthError(AuthStat),
}

/// A decoded reply body: accepted (with verifier) or denied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyBody {
    /// MSG_ACCEPTED.
    Accepted {
        /// The server's verifier.
        verf: OpaqueAuth,
        /// The outcome.
        stat: AcceptedReply,
    },
    /// MSG_DENIED.
    Denied(RejectedReply),
}

/// RFC 5531 §9 reply header: `xid`, `REPLY`, and the reply body up to the
/// procedure results. After [`ReplyHeader::decode`] of an accepted SUCCESS
/// reply the reader sits at the first byte of the results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyHeader {
    /// The transaction id this reply answers.
    pub xid: u32,
    /// Accepted or denied.
    pub body: ReplyBody,
}

impl ReplyHeader {
    /// True for an accepted SUCCESS reply.
    pub fn is_success(&self) -> bool {
        matches!(
            self.body,
            ReplyBody::Accepted {
                stat: AcceptedReply::Success,
                ..
            }
        )
    }
}

/// The words after the XID of almost every reply: REPLY, MSG_ACCEPTED, an
/// empty AUTH_NONE verifier (flavor 0, length 0), SUCCESS.
const PLAIN_SUCCESS: [u8; 20] = [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

impl Decode for ReplyHeader {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        // Fast path for the common reply (one comparison instead of six
        // decodes): the same value the general path below produces.
        if let Some(head) = r.rest().get(..24) {
            if head[4..] == PLAIN_SUCCESS {
                let xid = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
                r.take(24, "reply header")?;
                return Ok(Self {
                    xid,
                    body: ReplyBody::Accepted {
                        verf: OpaqueAuth::default(),
                        stat: AcceptedReply::Success,
                    },
                });
            }
        }
        let xid = r.u32("xid")?;
        let mtype = MsgType::decode(r)?;
        if mtype != MsgType::REPLY {
            return Err(DecodeError::BadDiscriminant {
                what: "msg_type (expected REPLY)",
                value: mtype.0,
            });
        }
        let body = match ReplyStat::decode(r)? {
            ReplyStat::MSG_ACCEPTED => {
                let verf = OpaqueAuth::decode(r)?;
                let stat = match AcceptStat::decode(r)? {
                    AcceptStat::SUCCESS => AcceptedReply::Success,
                    AcceptStat::PROG_MISMATCH => AcceptedReply::ProgMismatch {
                        low: r.u32("mismatch low")?,
                        high: r.u32("mismatch high")?,
                    },
                    other => AcceptedReply::Error(other),
                };
                ReplyBody::Accepted { verf, stat }
            }
            ReplyStat::MSG_DENIED => match RejectStat::decode(r)? {
                RejectStat::RPC_MISMATCH => ReplyBody::Denied(RejectedReply::RpcMismatch {
                    low: r.u32("mismatch low")?,
                    high: r.u32("mismatch high")?,
                }),
                RejectStat::AUTH_ERROR => {
                    ReplyBody::Denied(RejectedReply::AuthError(AuthStat::decode(r)?))
                }
                other => {
                    return Err(DecodeError::BadDiscriminant {
                        what: "reject_stat",
                        value: other.0,
                    })
                }
            },
            other => {
                return Err(DecodeError::BadDiscriminant {
                    what: "reply_stat",
                    value: other.0,
                })
            }
        };
        Ok(Self { xid, body })
    }
}

impl Encode for ReplyHeader {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.xid);
        out.put_u32(MsgType::REPLY.0);
        match &self.body {
            ReplyBody::Accepted { verf, stat } => {
                out.put_u32(ReplyStat::MSG_ACCEPTED.0);
                verf.encode(out);
                match stat {
                    AcceptedReply::Success => out.put_u32(AcceptStat::SUCCESS.0),
                    AcceptedReply::ProgMismatch { low, high } => {
                        out.put_u32(AcceptStat::PROG_MISMATCH.0);
                        out.put_u32(*low);
                        out.put_u32(*high);
                    }
                    AcceptedReply::Error(s) => out.put_u32(s.0),
                }
            }
            ReplyBody::Denied(rej) => {
                out.put_u32(ReplyStat::MSG_DENIED.0);
                match rej {
                    RejectedReply::RpcMismatch { low, high } => {
                        out.put_u32(RejectStat::RPC_MISMATCH.0);
                        out.put_u32(*low);
                        out.put_u32(*high);
                    }
                    RejectedReply::AuthError(s) => {
                        out.put_u32(RejectStat::AUTH_ERROR.0);
                        out.put_u32(s.0);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::auth::AuthSys;
    use crate::xdr::to_bytes;
    use proptest::prelude::*;

    #[test]
    fn plain_success_fast_path_agrees_with_the_general_decoder() {
        // The fast path takes exactly these bytes; any change of one word
        // must fall back to the general decoder and still decode right.
        let mut bytes = vec![0xde, 0xad, 0xbe, 0xef];
        bytes.extend_from_slice(&PLAIN_SUCCESS);
        bytes.extend_from_slice(&[0, 0, 0, 7]);
        let mut r = XdrReader::new(&bytes);
        let h = ReplyHeader::decode(&mut r).expect("decodes");
        assert_eq!(h.xid, 0xdead_beef);
        assert!(h.is_success());
        assert_eq!(r.position(), 24);
        // A verifier with a body is not the fast path's: same result shape.
        let mut odd = vec![0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4];
        odd.extend_from_slice(&[1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 7]);
        let mut r = XdrReader::new(&odd);
        let h = ReplyHeader::decode(&mut r).expect("decodes");
        assert!(h.is_success());
        assert_eq!(r.position(), 28);
        match h.body {
            ReplyBody::Accepted { verf, .. } => assert_eq!(verf.body, vec![1, 2, 3, 4]),
            other => panic!("unexpected {other:?}"),
        }
        // A truncated plain header is an error, not a fast-path success.
        assert!(ReplyHeader::decode(&mut XdrReader::new(&bytes[..23])).is_err());
    }

    #[test]
    fn peek_msg_type_tells_calls_from_replies() {
        assert_eq!(
            peek_msg_type(&[0, 0, 0, 9, 0, 0, 0, 0]),
            Some(MsgType::CALL)
        );
        assert_eq!(
            peek_msg_type(&[0, 0, 0, 9, 0, 0, 0, 1, 7]),
            Some(MsgType::REPLY)
        );
        assert_eq!(peek_msg_type(&[0, 0, 0, 9, 0, 0, 0]), None);
    }

    #[test]
    fn accepted_success_reply_leaves_reader_at_results() {
        #[rustfmt::skip]
        let bytes = [
            0x12, 0x34, 0x56, 0x78, 0, 0, 0, 1, // xid, REPLY
            0, 0, 0, 0,                         // MSG_ACCEPTED
            0, 0, 0, 0, 0, 0, 0, 0,             // verf AUTH_NONE, empty
            0, 0, 0, 0,                         // SUCCESS
            0xde, 0xad,                         // results
        ];
        let mut r = XdrReader::new(&bytes);
        let h = ReplyHeader::decode(&mut r).unwrap();
        assert_eq!(h.xid, 0x1234_5678);
        assert!(h.is_success());
        assert_eq!(r.rest(), [0xde, 0xad]);
    }

    #[test]
    fn unknown_accept_stat_is_reported_not_a_decode_error() {
        let bytes = [
            0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 77,
        ];
        let h: ReplyHeader = crate::xdr::decode_exact(&bytes, "reply").unwrap();
        assert_eq!(
            h.body,
            ReplyBody::Accepted {
                verf: OpaqueAuth::none(),
                stat: AcceptedReply::Error(AcceptStat(77))
            }
        );
    }

    #[test]
    fn fast_call_header_matches_struct_encoding() {
        let cred = AuthSys {
            uid: 7,
            ..Default::default()
        }
        .to_opaque_auth();
        let h = CallHeader {
            xid: 99,
            prog: 100003,
            vers: 3,
            proc_: 6,
            cred: cred.clone(),
            verf: OpaqueAuth::none(),
        };
        let mut auth = to_bytes(&cred);
        OpaqueAuth::none().encode(&mut auth);
        let mut fast = Vec::new();
        encode_call_header(&mut fast, 99, 100003, 3, 6, &auth);
        assert_eq!(fast, to_bytes(&h));
        assert_eq!(
            crate::xdr::decode_exact::<CallHeader>(&fast, "call").unwrap(),
            h
        );
    }

    fn arb_reply() -> impl Strategy<Value = ReplyHeader> {
        let body = prop_oneof![
            Just(AcceptedReply::Success),
            (any::<u32>(), any::<u32>())
                .prop_map(|(low, high)| AcceptedReply::ProgMismatch { low, high }),
            prop_oneof![Just(1u32), Just(3u32), Just(4u32), Just(5u32), 6u32..1000]
                .prop_map(|s| AcceptedReply::Error(AcceptStat(s))),
        ]
        .prop_map(|stat| ReplyBody::Accepted {
            verf: OpaqueAuth::none(),
            stat,
        });
        let denied = prop_oneof![
            (any::<u32>(), any::<u32>())
                .prop_map(|(low, high)| RejectedReply::RpcMismatch { low, high }),
            any::<u32>().prop_map(|s| RejectedReply::AuthError(AuthStat(s))),
        ]
        .prop_map(ReplyBody::Denied);
        (any::<u32>(), prop_oneof![body, denied]).prop_map(|(xid, body)| ReplyHeader { xid, body })
    }

    proptest! {
        #[test]
        fn reply_header_roundtrips(h in arb_reply()) {
            let back: ReplyHeader = crate::xdr::decode_exact(&to_bytes(&h), "reply").unwrap();
            prop_assert_eq!(back, h);
        }

        #[test]
        fn reply_header_decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = ReplyHeader::decode(&mut XdrReader::new(&bytes));
        }
    }
}
